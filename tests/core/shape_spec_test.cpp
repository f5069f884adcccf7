// The --shapes flag parser.
#include "core/frontend/shape_spec.h"
#include "core_test_util.h"

using namespace coretest;

namespace {
std::string parse_error(const std::string& text) {
  try {
    parse_shapes_flag(text);
  } catch (const UserError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("<other exception: ") + e.what() + ">";
  }
  return "<no error>";
}

// The flag `text` is refused with a message holding every one of `parts`.
void expect(const std::string& text, std::initializer_list<const char*> parts) {
  std::string msg = parse_error(text);
  CAPTURE(text);
  CAPTURE(msg);
  CHECK(msg != "<no error>");
  CHECK_FALSE(contains(msg, "<other exception"));
  for (const char* p : parts) CHECK_MESSAGE(contains(msg, p), "lacks '" << std::string(p) << "'");
}
}  // namespace

TEST_CASE("shape_spec: named, positional, dtype and 0-dim inputs") {
  Specialization s = parse_shapes_flag("x=1x3x224x224,mask=1x64");
  REQUIRE(s.size() == 2);
  CHECK(s[0].name == "x");
  CHECK(s[0].shape == Shape{1, 3, 224, 224});
  CHECK_FALSE(s[0].dtype.has_value());
  CHECK(s[1].name == "mask");
  CHECK(s[1].shape == Shape{1, 64});
  CHECK_FALSE(s[1].dtype.has_value());

  s = parse_shapes_flag("1x3x224x224");
  REQUIRE(s.size() == 1);
  CHECK(s[0].name.empty());
  CHECK(s[0].shape == Shape{1, 3, 224, 224});

  s = parse_shapes_flag("ids=1x16:int64");
  REQUIRE(s.size() == 1);
  CHECK(s[0].name == "ids");
  CHECK(s[0].shape == Shape{1, 16});
  CHECK(s[0].dtype == DType::Int64);

  s = parse_shapes_flag("x=scalar");
  REQUIRE(s.size() == 1);
  CHECK(s[0].name == "x");
  CHECK(s[0].shape.empty());
  CHECK_FALSE(s[0].dtype.has_value());

  s = parse_shapes_flag("x=scalar:bool,y=7:half,z=0x2:f32");
  REQUIRE(s.size() == 3);
  CHECK(s[0].shape.empty());
  CHECK(s[0].dtype == DType::Bool);
  CHECK(s[1].shape == Shape{7});
  CHECK(s[1].dtype == DType::Float16);
  CHECK(s[2].shape == Shape{0, 2});
  CHECK(s[2].dtype == DType::Float32);

  s = parse_shapes_flag("5");
  REQUIRE(s.size() == 1);
  CHECK(s[0].shape == Shape{5});
}

TEST_CASE("shape_spec: errors quote the flag") {
  expect("", {"--shapes needs a value", "x=1x3x224x224"});
  expect("x=1x-ax3", {"--shapes", "'1x-ax3'", "is not a shape like 1x3x224x224"});  // "a" alone is a symbol
  expect("x=1x2,x=3", {"'x=1x2,x=3'", "input 'x' is given twice"});
  expect("x=1x2:float8", {"unknown dtype 'float8'"});
  expect("x=1x2:", {"unknown dtype ''"});
  expect("1x2,3x4", {"'1x2,3x4'", "more than one unnamed shape"});
  expect("=1x2", {"name is missing"});
  expect("x=1x2,", {"empty item"});
  expect("x=1x2,,y=3", {"empty item"});
  expect("x=1x", {"'1x'", "is not a shape"});
  expect("x=x1", {"is not a shape"});
  expect("x=-1x2", {"'-1x2'", "is not a shape"});
  expect("x=1 x2", {"is not a shape"});
  expect("x=1x2x1234567890123", {"'1234567890123'", "is too large"});  // a number, too large: not "not a shape"
}

// Issue #12, items 3 and 7: sizes are overflow-checked and limited to kMaxTensorBytes; an empty shape is refused
// (0-dim inputs are written "scalar"); quoted text is escaped and cut.
TEST_CASE("shape_spec: absurd sizes, empty shapes, control characters") {
  expect("x=99999999999x64", {"would take 6.4e+12 bytes", "refuses tensors above 1 TiB"});
  expect("x=4294967296x4294967296x64", {"more than 2^64 bytes", "refuses tensors above"});
  expect("x=99999999999999999999x64", {"'99999999999999999999'", "is too large"});
  expect("x=1099511627777", {"is too large"});  // 2^40 + 1 elements in one dimension
  expect("x=274877906944x2:int64", {"would take 4.4e+12 bytes"});  // the dtype's size counts
  CHECK(parse_error("x=274877906944:float32") == "<no error>");      // exactly 2^40 bytes
  CHECK(parse_error("x=1099511627776:bool") == "<no error>");
  expect("x=", {"input 'x' is empty", "x=scalar"});
  expect("x=:bool", {"is empty", "scalar"});
  expect("x=1x\n64", {"\\x0a"});
  CHECK_FALSE(contains(parse_error("x=1x\n64"), "\n"));
  const std::string long_name(10000, 'y');
  std::string msg = parse_error(long_name + "=1x" + std::string(5000, 'z') + "-");
  CHECK(contains(msg, "characters)"));
  CHECK(msg.size() < 1000);

  auto dim_error = [](const std::string& text) {
    try {
      parse_dim_flag(text);
    } catch (const UserError& e) {
      return std::string(e.what());
    } catch (const std::exception& e) {
      return std::string("<other exception: ") + e.what() + ">";
    }
    return std::string("<no error>");
  };
  CHECK(contains(dim_error("B=1:99999999999999999999999"), "is too large"));
  CHECK(contains(dim_error("B=1:2000000000000"), "is too large"));
  CHECK(dim_error("B=1:32") == "<no error>");
}

TEST_CASE("shape_spec: specialization_str round trip") {
  for (const char* text : {"x=1x64:float32,mask=1x64:bool", "x=1x3x224x224,mask=1x64", "1x3x224x224",
                           "ids=1x16:int64", "x=scalar", "x=scalar:bool", "a=0,b=2x0x3:bfloat16"}) {
    CAPTURE(text);
    Specialization s = parse_shapes_flag(text);
    CHECK(specialization_str(s) == text);
    Specialization again = parse_shapes_flag(specialization_str(s));
    REQUIRE(again.size() == s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
      CHECK(again[i].name == s[i].name);
      CHECK(again[i].shape == s[i].shape);
      CHECK(again[i].dtype == s[i].dtype);
    }
  }
  // Aliases are printed with PyTorch's canonical names.
  CHECK(specialization_str(parse_shapes_flag("ids=1x16:long,m=2:half")) == "ids=1x16:int64,m=2:float16");
  CHECK(specialization_str({}) == "");
}

TEST_CASE("shape_spec: symbolic dimensions and --dim") {
  Specialization s = parse_shapes_flag("ids=BxT:int64,mask=BxT:bool,w=4x_n2");
  REQUIRE(s.size() == 3);
  CHECK(s[0].shape == Shape{0, 0});
  CHECK(s[0].symbols == std::vector<std::string>{"B", "T"});
  CHECK(s[2].shape == Shape{4, 0});
  CHECK(s[2].symbols == std::vector<std::string>{"", "_n2"});
  CHECK(spec_symbols(s) == std::vector<std::string>{"B", "T", "_n2"});
  CHECK(specialization_str(s) == "ids=BxT:int64,mask=BxT:bool,w=4x_n2");
  Specialization bound = bind_symbols(s, {"B", "T", "_n2"}, {2, 16, 5});
  CHECK(bound[0].shape == Shape{2, 16});
  CHECK(bound[1].shape == Shape{2, 16});
  CHECK(bound[2].shape == Shape{4, 5});
  CHECK(bound[0].symbols.empty());
  CHECK(specialization_str(bound) == "ids=2x16:int64,mask=2x16:bool,w=4x5");
  CHECK(parse_shapes_flag("x=1x64")[0].symbols.empty());  // plain shapes are unchanged

  DimRange d = parse_dim_flag("B=1:32");
  CHECK(d.name == "B");
  CHECK(d.lo == 1);
  CHECK(d.hi == 32);
  auto dim_error = [](const std::string& text) {
    try {
      parse_dim_flag(text);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  CHECK(contains(dim_error("B"), "expected NAME=LO:HI"));
  CHECK(contains(dim_error("B=1-3"), "expected NAME=LO:HI"));
  CHECK(contains(dim_error("1B=1:3"), "is not a symbol name"));
  CHECK(contains(dim_error("Bx=1:3"), "is not a symbol name"));
  CHECK(contains(dim_error("B=a:3"), "must be numbers"));
  CHECK(contains(dim_error("B=0:3"), "1 <= LO < HI"));
  CHECK(contains(dim_error("B=3:3"), "1 <= LO < HI"));
}
