// rope without exceptions (this file is always compiled with -fno-exceptions; no GoogleTest,
// whose failure reporting does not need it but whose prebuilt library was built with them).
//
//  1. The hot path still returns statuses and writes nothing on an error.
//  2. A cold-path error (bad spec, bad table length) calls the handler installed with
//     rope::set_error_handler with the right kind and a message naming the parameter, and the
//     call never returns: checked in a child process whose handler exits with a distinct code.
//  3. A handler that returns anyway does not let the call continue: the process aborts.
//  4. With no handler installed, the default one prints the message and aborts.
//
// Prints one line per check and "noexcept_test: N checks passed"; exits non-zero on a failure.
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <rope/rope.hpp>
#include <string>
#include <vector>

#if ROPE_HAS_EXCEPTIONS
#error "noexcept_test must be compiled with -fno-exceptions"
#endif

namespace {

int checks = 0;
int failures = 0;

void check(bool ok, const char* what) {
  ++checks;
  if (!ok) ++failures;
  std::printf("%s: %s\n", ok ? "ok  " : "FAIL", what);
}

constexpr int kHandlerExit = 42;
int handler_pipe = -1;

// Writes "<kind>|<message>" to the parent and exits: a handler must not return.
void exiting_handler(rope::error_kind kind, const char* message) {
  const std::string line =
      std::string(kind == rope::error_kind::out_of_range ? "out_of_range" : "invalid_argument") +
      "|" + message;
  const ssize_t w = write(handler_pipe, line.data(), line.size());
  (void)w;
  std::_Exit(kHandlerExit);
}

// Writes "returned|<message>" to the parent and returns (which a handler must not do).
void returning_handler(rope::error_kind, const char* message) {
  const std::string line = std::string("returned|") + message;
  const ssize_t w = write(handler_pipe, line.data(), line.size());
  (void)w;
}

// Sends text to the parent through the handler pipe (a child's marker that it went on).
void tell_parent(const char* text) {
  const ssize_t w = write(handler_pipe, text, std::strlen(text));
  (void)w;
}

struct child_result {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  std::string handler_output;  // what the handler (or, with stderr_too, stderr) sent
};

// Runs body in a child process; collects its exit status and what the handler sent.
template <class F>
child_result in_child(F body, bool stderr_too = false) {
  int fds[2];
  if (pipe(fds) != 0) std::abort();
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid < 0) std::abort();
  if (pid == 0) {
    close(fds[0]);
    handler_pipe = fds[1];
    if (stderr_too && dup2(fds[1], 2) < 0) std::_Exit(4);
    body();
    std::_Exit(0);  // the body returned: the error did not stop it
  }
  close(fds[1]);
  child_result r;
  char buf[512];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0)
    r.handler_output.append(buf, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

bool contains(const std::string& s, const char* needle) {
  return s.find(needle) != std::string::npos;
}

void hot_path_returns_statuses() {
  const rope::spec s = rope::make_spec(64, 32, 1e4, rope::layout::half_split);
  auto tab = rope::get_table<float>(s, 100);
  constexpr std::ptrdiff_t T = 3, H = 2, D = 64;
  std::vector<float> in(T * H * D, 0.5f), out(T * H * D, 7777.25f);
  std::vector<std::int64_t> pos = {0, 1, 100};  // 100 is past the table
  const auto st = rope::apply<float>(*tab, rope::packed_heads<const float>(in.data(), T, H, D),
                                     rope::packed_heads(out.data(), T, H, D), pos.data());
  check(st == rope::status::position_out_of_range,
        "hot path: position past the table -> status::position_out_of_range");
  bool untouched = true;
  for (float v : out) untouched = untouched && v == 7777.25f;
  check(untouched, "hot path: nothing written on the error");
  pos[2] = 99;
  const auto st2 = rope::apply<float>(*tab, rope::packed_heads<const float>(in.data(), T, H, D),
                                      rope::packed_heads(out.data(), T, H, D), pos.data());
  check(st2 == rope::status::ok && out[0] == 0.5f && out[T * H * D - 1] == 0.5f,
        "hot path: valid call -> status::ok (position 0 is the identity, tail copied)");
  const std::vector<float> kept = out;
  const auto st3 = rope::apply<float>(*tab, rope::packed_heads(out.data(), T, H, 16), pos.data());
  check(st3 == rope::status::bad_dimension && kept == out,
        "hot path: head_dim 16 < rotary_dim 32 -> status::bad_dimension, no handler call, nothing "
        "written");
}

}  // namespace

int main() {
  hot_path_returns_statuses();

  {
    const child_result r = in_child([] {
      rope::set_error_handler(&exiting_handler);
      (void)rope::make_spec(64, 7, 1e4, rope::layout::half_split);
    });
    check(r.exit_code == kHandlerExit,
          "bad rotary_dim: the installed handler ran and did not return");
    check(contains(r.handler_output, "invalid_argument|rotary_dim=7"),
          "bad rotary_dim: handler got error_kind::invalid_argument and 'rotary_dim=7'");
  }
  {
    const child_result r = in_child([] {
      rope::set_error_handler(&exiting_handler);
      (void)rope::get_table<double>(rope::make_spec(64, 64, 1e4, rope::layout::interleaved), 0);
    });
    check(r.exit_code == kHandlerExit && contains(r.handler_output, "out_of_range|positions=0"),
          "table length 0: handler got error_kind::out_of_range and 'positions=0'");
  }
  {
    const child_result r = in_child([] {
      rope::set_error_handler(&exiting_handler);
      rope::spec s;  // no layout
      s.head_dim = 64;
      s.rotary_dim = 64;
      (void)rope::get_table<float>(s, 10);
    });
    check(r.exit_code == kHandlerExit && contains(r.handler_output, "invalid_argument|layout=0"),
          "missing layout: handler got error_kind::invalid_argument and 'layout=0'");
  }
  {
    const child_result r = in_child([] {
      rope::set_error_handler(&returning_handler);
      (void)rope::make_spec(64, 64, -1.0, rope::layout::half_split);
      tell_parent("|continued after the error");  // must never be reached
    });
    check(r.signal == SIGABRT && contains(r.handler_output, "returned|base=-1") &&
              !contains(r.handler_output, "continued"),
          "a handler that returns: it ran (with 'base=-1'), then the process aborts instead of "
          "going on");
  }
  {
    const child_result r = in_child(
        [] {
          // The child's stderr goes to the parent: the default handler's message is checked.
          (void)rope::make_spec(64, 64, 0.5, rope::layout::half_split);
          tell_parent("|continued after the error");  // must never be reached
        },
        /*stderr_too=*/true);
    check(r.signal == SIGABRT && contains(r.handler_output, "base=0.5") &&
              !contains(r.handler_output, "continued"),
          "default handler: prints the message (with 'base=0.5') on stderr and aborts");
  }
  {
    const child_result r = in_child([] {
      const rope::error_handler previous = rope::set_error_handler(&exiting_handler);
      if (rope::set_error_handler(previous) != &exiting_handler) std::_Exit(3);
      rope::set_error_handler(&exiting_handler);
      (void)rope::make_spec(64, 64, 1e4, rope::layout::half_split);  // valid: no handler call
      std::_Exit(5);
    });
    check(r.exit_code == 5 && r.handler_output.empty(),
          "set_error_handler returns the previous handler; a valid spec never calls it");
  }

  std::printf("noexcept_test: %d checks passed, %d failed\n", checks - failures, failures);
  return failures == 0 ? 0 : 1;
}
