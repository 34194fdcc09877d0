// fp16 and bf16 storage of the fuzz target (tests/fuzz/apply_fuzz.cpp): run_typed's two 16-bit
// instantiations, in a translation unit of their own so that they compile beside the rest.
#include "apply_fuzz.hpp"

static_assert(
    std::is_same<std::tuple_element_t<2, rope_fuzz::storage_types>, rope::float16>::value &&
        std::is_same<std::tuple_element_t<3, rope_fuzz::storage_types>, rope::bfloat16>::value,
    "apply_fuzz_16bit.cpp instantiates storage types 2 and 3: fp16 and bf16");

template void rope_fuzz::run_type_index<2>(rope_fuzz::reader&, const rope::spec&,
                                           const rope::frequencies&);
template void rope_fuzz::run_type_index<3>(rope_fuzz::reader&, const rope::spec&,
                                           const rope::frequencies&);
