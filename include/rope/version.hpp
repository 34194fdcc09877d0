// rope/version.hpp: the library version. CMake reads the three numbers from this file.
#pragma once

#define ROPE_VERSION_MAJOR 0
#define ROPE_VERSION_MINOR 1
#define ROPE_VERSION_PATCH 0

/// The version as one integer: major * 10000 + minor * 100 + patch.
#define ROPE_VERSION (ROPE_VERSION_MAJOR * 10000 + ROPE_VERSION_MINOR * 100 + ROPE_VERSION_PATCH)
