// Errors. A UserError explains something about the user's input (model, flags, shapes) and is printed as is;
// an InternalError means thunderc itself is wrong and says "bug".
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace thunderc {

class UserError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& what)
      : std::logic_error("internal error (this is a bug in thunderc, please report it): " + what) {}
};

namespace detail {
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

template <typename... Args>
[[noreturn]] void user_error(const Args&... args) {
  throw UserError(detail::concat(args...));
}

template <typename... Args>
[[noreturn]] void internal_error(const Args&... args) {
  throw InternalError(detail::concat(args...));
}

}  // namespace thunderc

#define THUNDERC_CHECK(cond, ...)                                                            \
  do {                                                                                       \
    if (!(cond))                                                                             \
      ::thunderc::internal_error(__FILE__, ":", __LINE__, ": check '", #cond, "' failed: ", \
                                 ##__VA_ARGS__);                                             \
  } while (0)
