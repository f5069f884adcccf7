#include "codegen/symbolic_code.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdint>
#include <sstream>

#include "core/ir/error.h"

namespace thunderc {

namespace {

enum class Tok { Space, Ident, Number, Comment, String, Punct };

struct Token {
  Tok kind;
  std::string text;
};

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// One line of generated C++ as tokens (whitespace kept, so the line can be rebuilt). Numbers are
// preprocessing numbers ("64LL", "1.5e-05", "0x1p+3"), so a literal is always one token.
std::vector<Token> tokenize(const std::string& line) {
  std::vector<Token> out;
  std::size_t i = 0, n = line.size();
  while (i < n) {
    std::size_t j = i;
    char c = line[i];
    Tok kind;
    if (c == ' ' || c == '\t') {
      kind = Tok::Space;
      while (j < n && (line[j] == ' ' || line[j] == '\t')) ++j;
    } else if (c == '/' && i + 1 < n && line[i + 1] == '/') {
      kind = Tok::Comment;
      j = n;
    } else if (c == '/' && i + 1 < n && line[i + 1] == '*') {
      kind = Tok::Comment;
      std::size_t end = line.find("*/", i + 2);
      j = end == std::string::npos ? n : end + 2;
    } else if (c == '"' || c == '\'') {
      kind = Tok::String;
      for (++j; j < n && line[j] != c; ++j)
        if (line[j] == '\\') ++j;
      j = std::min(j + 1, n);
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      kind = Tok::Ident;
      while (j < n && ident_char(line[j])) ++j;
    } else if (digit(c) || (c == '.' && i + 1 < n && digit(line[i + 1]))) {
      kind = Tok::Number;
      ++j;
      while (j < n) {
        char d = line[j];
        if ((d == '+' || d == '-') && (line[j - 1] == 'e' || line[j - 1] == 'E' || line[j - 1] == 'p' || line[j - 1] == 'P'))
          ++j;
        else if (ident_char(d) || d == '.')
          ++j;
        else
          break;
      }
    } else {
      kind = Tok::Punct;
      j = i + 1;
    }
    out.push_back({kind, line.substr(i, j - i)});
    i = j;
  }
  return out;
}

// A decimal integer literal: its value and suffix ("LL", "u", ...). Octal and hexadecimal are not ints here.
bool integer_literal(const std::string& text, std::int64_t& value, std::string& suffix) {
  std::size_t k = 0;
  while (k < text.size() && digit(text[k])) ++k;
  if (k == 0 || k > 18 || (k > 1 && text[0] == '0')) return false;
  for (std::size_t s = k; s < text.size(); ++s)
    if (text[s] != 'u' && text[s] != 'U' && text[s] != 'l' && text[s] != 'L') return false;
  value = std::stoll(text.substr(0, k));
  suffix = text.substr(k);
  return true;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) {
      if (start < text.size()) lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::string trimmed(const std::string& s) {
  std::size_t a = s.find_first_not_of(" \t");
  return a == std::string::npos ? std::string() : s.substr(a);
}

// Token indices of a preprocessor line that lie inside an `if(...)` clause.
std::vector<bool> inside_if_clause(const std::vector<Token>& toks) {
  std::vector<bool> inside(toks.size(), false);
  for (std::size_t i = 0; i < toks.size(); ++i) {
    if (toks[i].kind != Tok::Ident || toks[i].text != "if") continue;
    std::size_t j = i + 1;
    while (j < toks.size() && toks[j].kind == Tok::Space) ++j;
    if (j >= toks.size() || toks[j].text != "(") continue;
    int depth = 0;
    for (; j < toks.size(); ++j) {
      if (toks[j].text == "(") ++depth;
      if (toks[j].text == ")" && --depth == 0) break;
      inside[j] = true;
    }
  }
  return inside;
}

// A polynomial in the symbols with integer coefficients: sum of coef * prod_s S_s^exp[s].
struct Polynomial {
  std::vector<std::pair<std::vector<int>, std::int64_t>> terms;  // (exponents, coefficient), coefficient != 0

  // "64LL", "(8LL + 64LL * s0_B)", "(0LL + 8LL * s0_B * s1_T * s1_T)".
  std::string c_expr(const std::vector<std::string>& vars) const {
    std::int64_t c = 0;
    std::string rest;
    for (const auto& [exp, coef] : terms) {
      bool constant = std::all_of(exp.begin(), exp.end(), [](int e) { return e == 0; });
      if (constant) {
        c = coef;
        continue;
      }
      rest += " + " + std::to_string(coef) + "LL";
      for (std::size_t s = 0; s < exp.size(); ++s)
        for (int e = 0; e < exp[s]; ++e) rest += " * " + vars[s];
    }
    return rest.empty() ? std::to_string(c) + "LL" : "(" + std::to_string(c) + "LL" + rest + ")";
  }
};

// The value of exps at `values`, or false on int64 overflow.
bool eval_exact(const std::vector<std::pair<std::vector<int>, std::int64_t>>& terms,
                const std::vector<std::int64_t>& values, std::int64_t& out) {
  __int128 sum = 0;
  for (const auto& [exp, coef] : terms) {
    __int128 t = coef;
    for (std::size_t s = 0; s < exp.size(); ++s)
      for (int e = 0; e < exp[s]; ++e) {
        t *= values[s];
        if (t > INT64_MAX || t < INT64_MIN) return false;
      }
    sum += t;
    if (sum > INT64_MAX || sum < INT64_MIN) return false;
  }
  out = static_cast<std::int64_t>(sum);
  return true;
}

// Fits vals[k] at bindings[k] (a grid, codegen_bindings) with a polynomial of degree <= 2 in each symbol,
// fewer where a symbol has fewer values (one value is kept back to check the fit where there are 3 or more):
// solved on a sub-grid, rounded to integers, then checked exactly on every binding.
bool fit_polynomial(const std::vector<std::vector<std::int64_t>>& bindings, const std::vector<std::int64_t>& vals,
                    std::size_t nsym, Polynomial& out, std::string& why) {
  std::vector<std::vector<std::int64_t>> distinct(nsym);
  for (const auto& b : bindings)
    for (std::size_t s = 0; s < nsym; ++s)
      if (std::find(distinct[s].begin(), distinct[s].end(), b[s]) == distinct[s].end()) distinct[s].push_back(b[s]);
  std::vector<int> degree(nsym);
  for (std::size_t s = 0; s < nsym; ++s) {
    int n = static_cast<int>(distinct[s].size());
    degree[s] = std::min(2, n >= 3 ? n - 2 : n - 1);
  }
  // Monomials: every exponent vector within the degrees.
  std::vector<std::vector<int>> monomials = {{}};
  for (std::size_t s = 0; s < nsym; ++s) {
    std::vector<std::vector<int>> next;
    for (const auto& m : monomials)
      for (int e = 0; e <= degree[s]; ++e) {
        next.push_back(m);
        next.back().push_back(e);
      }
    monomials = std::move(next);
  }
  // The sub-grid of the first degree+1 values of each symbol: as many points as monomials, invertible.
  std::vector<std::size_t> rows;
  for (std::size_t k = 0; k < bindings.size(); ++k) {
    bool in = true;
    for (std::size_t s = 0; s < nsym && in; ++s) {
      auto pos = std::find(distinct[s].begin(), distinct[s].end(), bindings[k][s]) - distinct[s].begin();
      in = pos <= degree[s];
    }
    if (in) rows.push_back(k);
  }
  const std::size_t n = monomials.size();
  THUNDERC_CHECK(rows.size() == n, "fit_polynomial: the bindings are not a grid");
  std::vector<std::vector<long double>> a(n, std::vector<long double>(n + 1));
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t c = 0; c < n; ++c) {
      long double x = 1;
      for (std::size_t s = 0; s < nsym; ++s)
        for (int e = 0; e < monomials[c][s]; ++e) x *= static_cast<long double>(bindings[rows[r]][s]);
      a[r][c] = x;
    }
    a[r][n] = static_cast<long double>(vals[rows[r]]);
  }
  for (std::size_t c = 0; c < n; ++c) {  // Gaussian elimination with partial pivoting
    std::size_t p = c;
    for (std::size_t r = c + 1; r < n; ++r)
      if (std::fabs(a[r][c]) > std::fabs(a[p][c])) p = r;
    std::swap(a[c], a[p]);
    THUNDERC_CHECK(a[c][c] != 0, "fit_polynomial: singular grid");
    for (std::size_t r = 0; r < n; ++r) {
      if (r == c) continue;
      long double f = a[r][c] / a[c][c];
      for (std::size_t j = c; j <= n; ++j) a[r][j] -= f * a[c][j];
    }
  }
  out.terms.clear();
  for (std::size_t c = 0; c < n; ++c) {
    long double x = a[c][n] / a[c][c];
    if (!(std::fabs(x) < 9e18L)) {
      why = "not a polynomial with integer coefficients";
      return false;
    }
    auto coef = static_cast<std::int64_t>(std::llround(x));
    bool constant = std::all_of(monomials[c].begin(), monomials[c].end(), [](int e) { return e == 0; });
    if (coef != 0 || constant) out.terms.push_back({monomials[c], coef});
  }
  for (std::size_t k = 0; k < bindings.size(); ++k) {
    std::int64_t v = 0;
    if (!eval_exact(out.terms, bindings[k], v) || v != vals[k]) {
      why = "not a polynomial of degree 2 or less in each symbol with integer coefficients";
      return false;
    }
  }
  return true;
}

}  // namespace

std::string generalize_code(const std::vector<SymbolRange>& symbols, const std::vector<std::string>& vars,
                            const std::vector<CodeSample>& samples, std::size_t max_sample, const std::string& what) {
  THUNDERC_CHECK(!samples.empty() && max_sample < samples.size() && vars.size() == symbols.size(),
                 "generalize_code: bad arguments");
  std::vector<std::vector<std::int64_t>> bindings;
  for (const CodeSample& s : samples) bindings.push_back(s.values);
  auto binding = [&](std::size_t k) {
    std::string b;
    for (std::size_t s = 0; s < symbols.size(); ++s)
      b += (s ? "," : "") + symbols[s].name + "=" + std::to_string(samples[k].values[s]);
    return b;
  };
  auto fail = [&](std::size_t k, const std::string& line, const std::string& why) {
    user_error("--cache \"symbolic values\": the code generated for ", what, " at ", binding(max_sample), " and at ",
               binding(k), " differs in more than its sizes (", why, ", in `", trimmed(line),
               "`), so one variant cannot run it for every size. Leave this operation to the torch executor "
               "(--executors ...,torch), or compile with --cache \"constant values\" and one --shapes per size");
  };

  std::vector<std::vector<std::string>> lines;
  for (const CodeSample& s : samples) lines.push_back(split_lines(s.text));
  const std::vector<std::string>& top = lines[max_sample];
  for (std::size_t k = 0; k < samples.size(); ++k)
    if (lines[k].size() != top.size())
      fail(k, top.empty() ? std::string() : top[0],
           std::to_string(top.size()) + " vs " + std::to_string(lines[k].size()) + " lines");

  std::ostringstream out;
  for (std::size_t l = 0; l < top.size(); ++l) {
    std::vector<std::vector<Token>> toks;
    for (std::size_t k = 0; k < samples.size(); ++k) toks.push_back(tokenize(lines[k][l]));
    std::vector<Token> merged = toks[max_sample];
    for (std::size_t k = 0; k < samples.size(); ++k)
      if (toks[k].size() != merged.size()) fail(k, top[l], "a different number of tokens");
    const bool preprocessor = trimmed(top[l]).rfind("#", 0) == 0;
    const std::vector<bool> in_if = preprocessor ? inside_if_clause(merged) : std::vector<bool>(merged.size(), false);
    bool replaced = false;
    const Token* previous = nullptr;  // the last token that is not a space
    for (std::size_t i = 0; i < merged.size(); ++i) {
      const Token& m = toks[max_sample][i];
      std::size_t differs = samples.size();
      for (std::size_t k = 0; k < samples.size() && differs == samples.size(); ++k)
        if (toks[k][i].kind != m.kind || toks[k][i].text != m.text) differs = k;
      if (differs < samples.size()) {
        const Token& other = toks[differs][i];
        if (m.kind == Tok::Comment && other.kind == Tok::Comment) {
          // comments: the maxima's
        } else if (m.kind == Tok::Number && other.kind == Tok::Number) {
          std::vector<std::int64_t> vals;
          std::string suffix;
          for (std::size_t k = 0; k < samples.size(); ++k) {
            std::int64_t v = 0;
            std::string sfx;
            if (!integer_literal(toks[k][i].text, v, sfx) || (k > 0 && sfx != suffix))
              fail(k, top[l], "the number " + toks[k][i].text + " where the maxima have " + m.text + ", not an integer size");
            suffix = sfx;
            vals.push_back(v);
          }
          if (previous && previous->kind == Tok::Comment && previous->text == kAtMax) {
            for (std::size_t k = 0; k < samples.size(); ++k)
              THUNDERC_CHECK(vals[k] <= vals[max_sample], "generalize_code: an ", kAtMax, " literal (", toks[k][i].text,
                             " at ", binding(k), ") exceeds its value at the maxima (", m.text, ") in `", trimmed(top[l]), "`");
          } else {
            Polynomial f;
            std::string why;
            if (!fit_polynomial(bindings, vals, symbols.size(), f, why)) {
              std::string seen;
              for (std::size_t k = 0; k < samples.size(); ++k)
                seen += (k ? ", " : "") + std::to_string(vals[k]) + " at " + binding(k);
              fail(differs, top[l], "a number that is " + seen + ": " + why);
            }
            if (preprocessor && !in_if[i]) fail(differs, top[l], "a size in a preprocessor line, outside an if() clause");
            merged[i].text = f.c_expr(vars);
            replaced = true;
          }
        } else {
          fail(differs, top[l], "'" + other.text + "' where the maxima have '" + m.text + "'");
        }
      }
      if (m.kind != Tok::Space) previous = &m;
    }
    std::string line;
    std::size_t first = 0;
    while (first < merged.size() && merged[first].kind == Tok::Space) line += merged[first++].text;
    if (replaced && first < merged.size() && merged[first].kind == Tok::Ident && merged[first].text == "static") {
      ++first;  // a static local would keep the sizes of the first call
      while (first < merged.size() && merged[first].kind == Tok::Space) ++first;
    }
    for (std::size_t i = first; i < merged.size(); ++i) line += merged[i].text;
    out << line << '\n';
  }
  return out.str();
}

}  // namespace thunderc
