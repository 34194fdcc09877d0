#!/usr/bin/env python3
"""Synthetic golden cases (format rope-golden/1, shared/golden/README.md) for the edges the
shipped set does not reach: head dims 2, 6 and 512, partial rotary 0.25-0.75, linear factor < 1,
ntk at d = 4, dynamic at L < M, L = M, M + 1 and past 2^20, YaRN without truncation, with
fractional betas, mscale alone, mscale 0, DeepSeek-style equal mscales, an explicit attention
factor, factor 1, the ramp clamped at 0 and at d - 1 and lo == hi, Llama 3 with other bands,
LongRoPE at L = M0 and M0 + 1, factor 1 and an explicit attention factor; proportional (Gemma 4's
global layers: pairs across the whole head, the first int(rho * D // 2) rotating, the rest with
frequency 0), with a factor and with HF's floor of a product just under an integer; positions 0
to 2^20.

Values are float64 (math) straight from shared/rope-formulas.md, independent of the library,
and each is checked against a 60-digit mpmath evaluation before it is written.

    python3 tests/tools/make_synthetic_golden.py tests/data/golden_synthetic
"""
import math, random, sys, os
import mpmath as mp
mp.mp.dps = 60

OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)
POS = [0, 1, 7, 100, 4095, 4096, 65535, 999999, 1000000, 1048575, 1048576]


def theta(b, j, d, M=math):
    if M is math:
        return b ** (-2.0 * j / d)
    return mp.power(mp.mpf(b), -mp.mpf(2 * j) / d)


def freqs(cfg, M):
    """(omega list, A, extras) for numeric module M (math or mp)."""
    t = cfg['rope_type']; d = cfg['rotary_dim']; b = cfg['base']; P = d // 2
    ln = math.log if M is math else mp.log
    f = (lambda v: float(v)) if M is math else (lambda v: mp.mpf(v))
    th = [theta(b, j, d, M) for j in range(P)]
    ex = {}
    if t == 'default':
        return th, f(1), ex
    s = f(cfg.get('factor', 1))
    if t == 'linear':
        return [x / s for x in th], f(1), ex
    if t in ('ntk', 'dynamic'):
        if t == 'ntk':
            g = s
        else:
            Mm = f(cfg['max_position_embeddings']); L = max(f(cfg['seq_len']), Mm)
            g = s * L / Mm - (s - 1)
        bp = f(b) * g ** (f(d) / (d - 2))
        ex['derived_effective_base'] = bp
        return [bp ** (-f(2 * j) / d) for j in range(P)], f(1), ex
    if t == 'yarn':
        M0 = f(cfg['original_max_position_embeddings'])
        pi = math.pi if M is math else mp.pi
        c = lambda n: f(d) * ln(M0 / (2 * pi * f(n))) / (2 * ln(f(b)))
        lo, hi = c(cfg['beta_fast']), c(cfg['beta_slow'])
        if cfg['truncate']:
            lo, hi = (math.floor(lo), math.ceil(hi)) if M is math else (mp.floor(lo), mp.ceil(hi))
        lo = max(lo, 0); hi = min(hi, d - 1)
        if hi == lo:
            hi = hi + f('0.001') if M is not math else hi + 0.001
        r = [min(max((j - lo) / f(hi - lo), 0), 1) for j in range(P)]
        om = [th[j] * (1 - r[j] + r[j] / s) for j in range(P)]
        ex['derived_ramp_low'] = lo; ex['derived_ramp_high'] = hi
        m = lambda mu: f(1) if s <= 1 else 1 + f('0.1') * f(mu) * ln(s) if M is not math else (1.0 if s <= 1 else 1 + 0.1 * mu * ln(s))
        if 'attention_factor_config' in cfg:
            A = f(cfg['attention_factor_config'])
        elif cfg.get('mscale') and cfg.get('mscale_all_dim'):
            A = m(cfg['mscale']) / m(cfg['mscale_all_dim'])
        else:
            A = m(1)
        return om, A, ex
    if t == 'llama3':
        M0 = f(cfg['original_max_position_embeddings']); a = f(cfg['low_freq_factor']); be = f(cfg['high_freq_factor'])
        pi = math.pi if M is math else mp.pi
        om = []; band = []
        for j in range(P):
            lam = 2 * pi / th[j]
            if lam < M0 / be:
                om.append(th[j]); band.append('h')
            elif lam > M0 / a:
                om.append(th[j] / s); band.append('l')
            else:
                sg = (M0 / lam - a) / (be - a)
                om.append((1 - sg) * th[j] / s + sg * th[j]); band.append('m')
        ex['derived_band'] = ' '.join(band)
        return om, f(1), ex
    if t == 'longrope':
        M0 = cfg['original_max_position_embeddings']; L = cfg['seq_len']
        use_long = L > M0
        e = cfg['long_factor'] if use_long else cfg['short_factor']
        ex['derived_selected_factors'] = 'long' if use_long else 'short'
        om = [th[j] / f(e[j]) for j in range(P)]
        if 'attention_factor_config' in cfg:
            A = f(cfg['attention_factor_config'])
        elif s <= 1:
            A = f(1)
        else:
            A = (1 + ln(s) / ln(f(M0))) ** f('0.5') if M is not math else math.sqrt(1 + ln(s) / ln(M0))
        return om, A, ex
    if t == 'proportional':
        # HF's _compute_proportional_rope_parameters: exponent over the whole head (d = D here),
        # int(rho * D // 2) rotated pairs (Python's float floor of the rounded product), zeros
        # after, all divided by factor (default 1); A = 1.
        k = int(cfg['rho'] * d // 2)
        ex['derived_rotated_pairs'] = k
        return [th[j] / s if j < k else f(0) for j in range(P)], f(1), ex
    raise ValueError(t)


def rotate(x, om, A, p, layout, d, M):
    out = list(x)
    P = d // 2
    for j in range(P):
        iu, iv = (2 * j, 2 * j + 1) if layout == 'interleaved' else (j, j + P)
        phi = p * om[j]
        c = A * (math.cos(phi) if M is math else mp.cos(phi))
        s_ = A * (math.sin(phi) if M is math else mp.sin(phi))
        u, v = x[iu], x[iv]
        out[iu] = u * c - v * s_
        out[iv] = u * s_ + v * c
    return out


def g17(v):
    return '%.17g' % float(v)


def shortest(v):
    return repr(float(v)) if not float(v).is_integer() else str(int(v)) if abs(v) < 1e16 else repr(float(v))


worst = {}


def case(name, layout, D, rho, base, rope_type, positions=POS, seed=1, **params):
    d = D if rope_type == 'proportional' else int(D * rho)
    assert d % 2 == 0
    cfg = dict(rope_type=rope_type, rotary_dim=d, base=base, rho=rho, **params)
    rnd = random.Random(seed)
    x = [rnd.uniform(-1, 1) for _ in range(D)]
    om, A, ex = freqs(cfg, math)
    omm, Am, exm = freqs(cfg, mp)
    # audit float64 vs 60 digits
    assert all((a == 0) == (b == 0) for a, b in zip(om, omm)), name  # proportional's zeros
    rel = max((abs(mp.mpf(a) - b) / b for a, b in zip(om, omm) if b != 0), default=0)
    assert rel < 1e-13, (name, rel)
    assert abs(mp.mpf(A) - Am) < 1e-15, (name, A, Am)
    outs = []
    aud = 0
    for p in positions:
        o = rotate(x, om, A, p, layout, d, math)
        om_ = rotate([mp.mpf(v) for v in x], omm, Am, p, layout, d, mp)
        aud = max(aud, max(float(abs(mp.mpf(a) - b)) for a, b in zip(o, om_)))
        assert aud <= 1e-12 + 2e-15 * p * 0.5 + 1e-12, (name, p, aud)
        outs.append((p, o))
    worst[name] = (float(rel), aud)
    L = ['# synthetic case (tests/tools/make_synthetic_golden.py): float64 from rope-formulas.md, audited with mpmath',
         'format=rope-golden/1', 'case=' + name, 'set=synthetic', 'layout=' + layout,
         'head_dim=%d' % D, 'rotary_dim=%d' % d, 'partial_rotary_factor=' + repr(float(rho)),
         'base=' + shortest(base), 'rope_type=' + rope_type]
    for k, v in params.items():
        if isinstance(v, bool):
            L.append('%s=%s' % (k, 'true' if v else 'false'))
        elif isinstance(v, list):
            L.append('%s=%s' % (k, ' '.join(shortest(e) for e in v)))
        elif isinstance(v, str):
            L.append('%s=%s' % (k, v))
        else:
            L.append('%s=%s' % (k, shortest(v)))
    L.append('attention_factor=' + g17(A))
    for k, v in ex.items():
        L.append('%s=%s' % (k, v if isinstance(v, str) else g17(v)))
    L += ['seed=%d' % seed, 'num_positions=%d' % len(positions),
          'positions=' + ' '.join(map(str, positions)), 'end_header']
    L.append('inv_freq %d' % len(om)); L.append(' '.join(g17(v) for v in om))
    L.append('x %d' % D); L.append(' '.join(g17(v) for v in x))
    for p, o in outs:
        L.append('out %d %d' % (p, D)); L.append(' '.join(g17(v) for v in o))
    L.append('end')
    with open(os.path.join(OUT, name + '.txt'), 'w') as fh:
        fh.write('\n'.join(L) + '\n')


def lists(P, seed, lo, hi):
    r = random.Random(seed)
    return [round(r.uniform(lo, hi), 5) for _ in range(P)]


C = case
# default: edge dims, both layouts
C('S01_default_half_hd2', 'half', 2, 1.0, 10000, 'default')
C('S02_default_inter_hd6', 'interleaved', 6, 1.0, 10000, 'default')
C('S03_default_inter_hd512_b1e7', 'interleaved', 512, 1.0, 1e7, 'default')
C('S04_default_half_hd160_p04', 'half', 160, 0.4, 500000, 'default')
C('S05_default_inter_hd80_p03', 'interleaved', 80, 0.3, 10000, 'default')   # 80*0.3 = 24
# linear
C('S06_linear_inter_hd160_p025_f2_5', 'interleaved', 160, 0.25, 10000, 'linear', factor=2.5)
C('S07_linear_half_hd320_f16', 'half', 320, 1.0, 1e6, 'linear', factor=16)
C('S08_linear_half_hd64_f0_5', 'half', 64, 1.0, 10000, 'linear', factor=0.5)
# ntk
C('S09_ntk_inter_hd64_f8', 'interleaved', 64, 1.0, 10000, 'ntk', factor=8)
C('S10_ntk_half_hd8_p05_d4', 'half', 8, 0.5, 10000, 'ntk', factor=3)
C('S11_ntk_inter_hd192_p075_f1_5', 'interleaved', 192, 0.75, 500000, 'ntk', factor=1.5)
# dynamic
C('S12_dynamic_half_hd128_LltM', 'half', 128, 1.0, 10000, 'dynamic', factor=4, max_position_embeddings=4096, seq_len=100)
C('S13_dynamic_inter_hd128_LeqM', 'interleaved', 128, 1.0, 10000, 'dynamic', factor=4, max_position_embeddings=4096, seq_len=4096)
C('S14_dynamic_inter_hd80_p05_L1048577', 'interleaved', 80, 0.5, 500000, 'dynamic', factor=2.5, max_position_embeddings=8192, seq_len=1048577)
C('S15_dynamic_half_hd96_L4097', 'half', 96, 1.0, 10000, 'dynamic', factor=8, max_position_embeddings=4096, seq_len=4097)
# yarn
C('S16_yarn_inter_hd64_p05_notrunc', 'interleaved', 64, 0.5, 10000, 'yarn', factor=8, original_max_position_embeddings=2048,
  max_position_embeddings=16384, beta_fast=32, beta_slow=1, truncate=False)
C('S17_yarn_half_hd128_mscale_only', 'half', 128, 1.0, 10000, 'yarn', factor=4, original_max_position_embeddings=4096,
  max_position_embeddings=16384, beta_fast=32, beta_slow=1, truncate=True, mscale=0.707)
C('S18_yarn_half_hd192_deepseek_equal_mscale', 'half', 192, 1/3, 10000, 'yarn', factor=40, original_max_position_embeddings=4096,
  max_position_embeddings=163840, beta_fast=32, beta_slow=1, truncate=True, mscale=1, mscale_all_dim=1)
C('S19_yarn_inter_hd128_attncfg', 'interleaved', 128, 1.0, 1e6, 'yarn', factor=4, original_max_position_embeddings=32768,
  max_position_embeddings=131072, beta_fast=16, beta_slow=2, truncate=True, attention_factor_config=0.8)
C('S20_yarn_half_hd64_smallM0_lo0', 'half', 64, 1.0, 10000, 'yarn', factor=2, original_max_position_embeddings=64,
  max_position_embeddings=128, beta_fast=32, beta_slow=1, truncate=True)
C('S21_yarn_half_hd64_f1', 'half', 64, 1.0, 10000, 'yarn', factor=1, original_max_position_embeddings=4096,
  max_position_embeddings=4096, beta_fast=32, beta_slow=1, truncate=True)
C('S22_yarn_inter_hd32_p05_fracbetas_notrunc', 'interleaved', 32, 0.5, 10000, 'yarn', factor=6, original_max_position_embeddings=8192,
  max_position_embeddings=49152, beta_fast=24.5, beta_slow=1.5, truncate=False)
C('S23_yarn_half_hd64_mscale0', 'half', 64, 1.0, 10000, 'yarn', factor=16, original_max_position_embeddings=4096,
  max_position_embeddings=65536, beta_fast=32, beta_slow=1, truncate=True, mscale=0, mscale_all_dim=1)
C('S24_yarn_half_hd128_b1e6_hiclamp', 'half', 128, 1.0, 1e6, 'yarn', factor=32, original_max_position_embeddings=1048576,
  max_position_embeddings=33554432, beta_fast=32, beta_slow=1, truncate=True)
# llama3
C('S25_llama3_inter_hd128_f8', 'interleaved', 128, 1.0, 500000, 'llama3', factor=8, low_freq_factor=1, high_freq_factor=4,
  original_max_position_embeddings=8192)
C('S26_llama3_half_hd96_p05_custom', 'half', 96, 0.5, 10000, 'llama3', factor=4, low_freq_factor=2, high_freq_factor=8,
  original_max_position_embeddings=4096)
C('S27_llama3_inter_hd64_frac', 'interleaved', 64, 1.0, 1e6, 'llama3', factor=2.5, low_freq_factor=0.5, high_freq_factor=3.5,
  original_max_position_embeddings=16384)
# longrope
P = 48
sf, lf = lists(P, 5, 1.0, 1.5), lists(P, 6, 1.0, 40.0)
C('S28_longrope_half_hd96_short_L_eq_M0', 'half', 96, 1.0, 10000, 'longrope', factor=32, original_max_position_embeddings=4096,
  max_position_embeddings=131072, seq_len=4096, short_factor=sf, long_factor=lf)
C('S29_longrope_half_hd96_long_L_M0p1', 'half', 96, 1.0, 10000, 'longrope', factor=32, original_max_position_embeddings=4096,
  max_position_embeddings=131072, seq_len=4097, short_factor=sf, long_factor=lf)
sf2, lf2 = lists(20, 7, 0.9, 1.2), lists(20, 8, 1.0, 16.0)
C('S30_longrope_inter_hd80_p05_long', 'interleaved', 80, 0.5, 500000, 'longrope', factor=8, original_max_position_embeddings=8192,
  max_position_embeddings=65536, seq_len=1000001, short_factor=sf2, long_factor=lf2)
C('S31_longrope_inter_hd80_p05_short_f1', 'interleaved', 80, 0.5, 500000, 'longrope', factor=1, original_max_position_embeddings=8192,
  max_position_embeddings=8192, seq_len=1, short_factor=sf2, long_factor=lf2)
C('S32_longrope_half_hd64_short_attncfg', 'half', 64, 1.0, 10000, 'longrope', factor=16, original_max_position_embeddings=2048,
  max_position_embeddings=32768, seq_len=2000, short_factor=lists(32, 9, 1, 2), long_factor=lists(32, 10, 1, 20),
  attention_factor_config=1.25)
C('S33_yarn_half_hd16_b100_hiclamp', 'half', 16, 1.0, 100, 'yarn', factor=4, original_max_position_embeddings=65536,
  max_position_embeddings=262144, beta_fast=1024, beta_slow=1, truncate=True)
C('S34_yarn_inter_hd8_b100_lo_eq_hi', 'interleaved', 8, 1.0, 100, 'yarn', factor=4, original_max_position_embeddings=1000000,
  max_position_embeddings=4000000, beta_fast=32, beta_slow=1, truncate=True)
C('S35_dynamic_half_hd64_with_orig_key', 'half', 64, 1.0, 10000, 'dynamic', factor=2, max_position_embeddings=4096,
  original_max_position_embeddings=2048, seq_len=10000)
C('S36_yarn_half_hd128_p05_notrunc_f32', 'half', 128, 0.5, 150000, 'yarn', factor=32, original_max_position_embeddings=4096,
  max_position_embeddings=131072, beta_fast=32, beta_slow=1, truncate=False)
# proportional (Gemma 4's full-attention entry: global_head_dim 512, rho 0.25, theta 1e6: 64 of
# 256 pairs rotate); and rho 0.58 over 100, whose product 57.99999999999999 floors to 28 pairs.
C('S37_proportional_half_hd512_p025_b1e6', 'half', 512, 0.25, 1e6, 'proportional')
C('S38_proportional_inter_hd100_p058_f8', 'interleaved', 100, 0.58, 1e6, 'proportional', factor=8)
for k, v in sorted(worst.items()):
    print('%-45s inv_freq rel %.2e  out abs(f64 vs mp) %.2e' % (k, v[0], v[1]))
