// rope/fwd.hpp: declarations of rope's types, for a header that names them without including
// the library (a function that takes `const rope::table<float>&`, a struct that holds a
// `rope::layout`).
//
// Include this rather than declaring `namespace rope { template <class> class table; }`
// yourself: rope's names live in an inline namespace named after the build mode
// (rope/config.hpp, ROPE_ABI_NAMESPACE), so a declaration of one's own names another entity
// (the call is ambiguous, or the program does not link). Every rope header includes this one,
// so the declarations here cannot drift from the definitions.
#pragma once

#include "rope/config.hpp"

ROPE_BEGIN_NAMESPACE

// rope/spec.hpp
enum class layout : unsigned char;
enum class direction : unsigned char;
enum class rounding : unsigned char;
enum class status : unsigned char;
struct spec;
struct frequencies;
struct mrope_sections;
struct xdrope_sections;

// rope/storage.hpp (the default argument is given here, once)
struct float16;
struct bfloat16;
enum class storage_format : unsigned char;
template <class T, class Enable = void>
struct storage_traits;

// rope/table.hpp
enum class table_mode : unsigned char;
template <class Real>
class table;
class table_cache;

// rope/apply.hpp
template <class T>
struct heads_view;

// rope/isa.hpp
enum class isa : unsigned char;

// rope/scaling.hpp
enum class scaling_type : unsigned char;
struct scaling;
struct model_config;
struct scaled_spec;

ROPE_END_NAMESPACE  // rope
