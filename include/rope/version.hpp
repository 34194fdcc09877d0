/// \file rope/version.hpp
/// The library version. CMake reads the three numbers from this file (one place to change).
#pragma once

/// Incremented for changes that break source compatibility (CMake: SameMajorVersion).
#define ROPE_VERSION_MAJOR 0
/// Incremented for additions.
#define ROPE_VERSION_MINOR 1
/// Incremented for fixes.
#define ROPE_VERSION_PATCH 0

/// The version as one integer: major * 10000 + minor * 100 + patch.
#define ROPE_VERSION (ROPE_VERSION_MAJOR * 10000 + ROPE_VERSION_MINOR * 100 + ROPE_VERSION_PATCH)
