// LibTorch pulls in glog, whose CHECK* macros clash with doctest's. Tests that use both include this:
// LibTorch first, glog's macros removed, then doctest's.
#pragma once

#include <torch/script.h>

#undef CHECK
#undef CHECK_EQ
#undef CHECK_NE
#undef CHECK_LE
#undef CHECK_LT
#undef CHECK_GE
#undef CHECK_GT

#include <doctest/doctest.h>
