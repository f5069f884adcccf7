#include "core/ir/attr_codec.h"

#include "core/ir/error.h"

namespace thunderc {

namespace {
enum Tag : std::int64_t { kNone = 0, kBool = 1, kInt = 2, kFloat = 3, kString = 4, kIntList = 5, kDType = 6 };
}

EncodedAttrs encode_attrs(const OpDef& op, const Attrs& attrs) {
  EncodedAttrs e;
  for (const AttrSpec& spec : op.attrs) {
    const AttrValue& v = attrs.get(spec.name);
    if (std::holds_alternative<None>(v)) {
      e.ints.push_back(kNone);
    } else if (auto b = std::get_if<bool>(&v)) {
      e.ints.insert(e.ints.end(), {kBool, *b ? 1 : 0});
    } else if (auto i = std::get_if<std::int64_t>(&v)) {
      e.ints.insert(e.ints.end(), {kInt, *i});
    } else if (auto d = std::get_if<double>(&v)) {
      e.ints.push_back(kFloat);
      e.floats.push_back(*d);
    } else if (auto s = std::get_if<std::string>(&v)) {
      e.ints.insert(e.ints.end(), {kString, static_cast<std::int64_t>(e.strings.size())});
      e.strings.push_back(*s);
    } else if (auto l = std::get_if<IntList>(&v)) {
      e.ints.insert(e.ints.end(), {kIntList, static_cast<std::int64_t>(l->size())});
      e.ints.insert(e.ints.end(), l->begin(), l->end());
    } else {
      e.ints.insert(e.ints.end(), {kDType, static_cast<std::int64_t>(std::get<DType>(v))});
    }
  }
  return e;
}

Attrs decode_attrs(const OpDef& op, const std::int64_t* ints, std::size_t num_ints, const double* floats,
                   std::size_t num_floats, const char* const* strings, std::size_t num_strings) {
  std::size_t ii = 0, fi = 0;
  auto next_int = [&]() {
    THUNDERC_CHECK(ii < num_ints, op.name, ": encoded attributes end early");
    return ints[ii++];
  };
  Attrs attrs;
  for (const AttrSpec& spec : op.attrs) {
    std::int64_t tag = next_int();
    switch (tag) {
      case kNone: attrs.set(spec.name, None{}); break;
      case kBool: attrs.set(spec.name, next_int() != 0); break;
      case kInt: attrs.set(spec.name, next_int()); break;
      case kFloat:
        THUNDERC_CHECK(fi < num_floats, op.name, ": encoded float attributes end early");
        attrs.set(spec.name, floats[fi++]);
        break;
      case kString: {
        std::int64_t s = next_int();
        THUNDERC_CHECK(s >= 0 && static_cast<std::size_t>(s) < num_strings, op.name, ": bad string index");
        attrs.set(spec.name, std::string(strings[s]));
        break;
      }
      case kIntList: {
        std::int64_t n = next_int();
        THUNDERC_CHECK(n >= 0 && ii + static_cast<std::size_t>(n) <= num_ints, op.name, ": bad int list length");
        attrs.set(spec.name, IntList(ints + ii, ints + ii + n));
        ii += static_cast<std::size_t>(n);
        break;
      }
      case kDType: {
        std::int64_t d = next_int();
        THUNDERC_CHECK(d >= 0 && d < kNumDTypes, op.name, ": bad dtype code ", d);
        attrs.set(spec.name, static_cast<DType>(d));
        break;
      }
      default: internal_error(op.name, ": bad attribute tag ", tag, " for '", spec.name, "'");
    }
  }
  THUNDERC_CHECK(ii == num_ints && fi == num_floats, op.name, ": encoded attributes have extra values");
  return attrs;
}

}  // namespace thunderc
