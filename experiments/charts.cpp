/**
 * @file charts.cpp
 * Inline SVG charts: axes with rounded ticks, bars, points, lines and heat maps.
 */
#include "experiments/charts.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

#include "ecs/text.hpp"

namespace mv::chart {

namespace {

constexpr double kWidth = 880;
constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
constexpr int kColours = static_cast<int>(sizeof(kPalette) / sizeof(kPalette[0]));

const char* colour(size_t i) { return kPalette[i % kColours]; }

/// A number as people read it on an axis: at most 6 significant digits, no exponent below 10^6.
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", std::abs(v) < 1e-12 ? 0.0 : v);
  return buf;
}

/// Farthest a coordinate goes from the page (px): a value far off the axis, or not finite,
/// is drawn at the edge of this band, never as "inf" or "nan" in the SVG.
constexpr double kMaxCoordinate = 1e6;

/// A coordinate, to 0.1 px.
std::string px(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", std::isnan(v) ? 0.0 : std::clamp(v, -kMaxCoordinate, kMaxCoordinate));
  return buf;
}

/// Largest magnitude an axis spans: sums of figures near double's limit overflow to
/// infinity, and an axis to infinity has no ticks.
constexpr double kMaxAxis = 1e300;

/// `v` held within [-kMaxAxis, kMaxAxis] (NaN: 0).
double axisValue(double v) { return std::isnan(v) ? 0.0 : std::clamp(v, -kMaxAxis, kMaxAxis); }

/// Evenly spaced round tick values covering [lo, hi] (steps of 1, 2 or 5 × 10^k).
/// At most count + 2 ticks, each its index times the step (no sum that stalls where the step
/// is below the values' resolution); the ends alone when the range is below it.
std::vector<double> ticks(double lo, double hi, int count) {
  lo = axisValue(lo);
  hi = axisValue(hi);
  if (!(hi > lo)) hi = lo + 1;
  count = std::max(count, 1);
  const double raw = (hi - lo) / count;
  if (!(raw > 0) || !std::isfinite(raw) || lo + raw == lo) return {lo, hi};
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (const double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  std::vector<double> out;
  const double first = std::ceil(lo / step - 1e-9);
  for (int k = 0; k <= count + 1; ++k) {
    const double t = (first + k) * step;
    if (t > hi + step * 1e-9) break;
    out.push_back(t);
  }
  if (out.empty()) out = {lo, hi};
  return out;
}

/// The smallest tick at or above `hi` (the top of an axis starting at 0).
double niceTop(double hi) {
  if (!(hi > 0)) return 1;
  hi = axisValue(hi);
  const std::vector<double> t = ticks(0, hi, 5);
  return t.back() < hi ? t.back() + (t.size() > 1 ? t[1] - t[0] : hi) : t.back();
}

std::string svgOpen(double height) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + px(kWidth) + "\" height=\"" + px(height) +
         "\" viewBox=\"0 0 " + px(kWidth) + " " + px(height) + "\" font-family=\"sans-serif\" font-size=\"11\">\n";
}

std::string text(double x, double y, std::string_view s, const char* anchor = "start", const char* extra = "") {
  return "<text x=\"" + px(x) + "\" y=\"" + px(y) + "\" text-anchor=\"" + anchor + "\"" + extra + ">" + escape(s) +
         "</text>\n";
}

std::string line(double x1, double y1, double x2, double y2, const char* stroke = "#999") {
  return "<line x1=\"" + px(x1) + "\" y1=\"" + px(y1) + "\" x2=\"" + px(x2) + "\" y2=\"" + px(y2) + "\" stroke=\"" +
         stroke + "\"/>\n";
}

std::string rect(double x, double y, double w, double h, const std::string& fill, std::string_view title = {}) {
  std::string r = "<rect x=\"" + px(x) + "\" y=\"" + px(y) + "\" width=\"" + px(std::max(w, 0.0)) + "\" height=\"" +
                  px(std::max(h, 0.0)) + "\" fill=\"" + fill + "\"";
  if (title.empty()) return r + "/>\n";
  return r + "><title>" + escape(title) + "</title></rect>\n";
}

/// A legend of coloured squares, left to right from (x, y).
std::string legend(const std::vector<std::string>& names, double x, double y) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    out += rect(x, y - 9, 10, 10, colour(i));
    out += text(x + 14, y, names[i]);
    x += 24 + 6.5 * static_cast<double>(characterCount(names[i]));
  }
  return out;
}

/// `s` cut to `n` characters (an ellipsis marks the cut).
std::string shorten(const std::string& s, size_t n) {
  return characterCount(s) <= n ? s : s.substr(0, prefixOfCharacters(s, n - 1)) + "\u2026";
}

/// A linear map of [lo, hi] onto [a, b].
struct Scale {
  double lo, hi, a, b;
  double operator()(double v) const { return a + (v - lo) / (hi - lo) * (b - a); }
};

/// Horizontal grid lines and labels of a y axis from `y` over [left, right].
std::string yAxis(const Scale& y, const std::vector<double>& values, double left, double right,
                  const std::string& label, bool log) {
  std::string out;
  for (const double t : values) {
    out += line(left, y(t), right, y(t), "#e3e3e3");
    out += text(left - 4, y(t) + 4, num(log ? std::pow(10.0, t) : t), "end");
  }
  const double mid = (y.a + y.b) / 2;
  out += "<text x=\"12\" y=\"" + px(mid) + "\" text-anchor=\"middle\" transform=\"rotate(-90 12 " + px(mid) + ")\">" +
         escape(label) + "</text>\n";
  return out;
}

/// Ticks and labels of an x axis along `bottom`.
std::string xAxis(const Scale& x, const std::vector<double>& values, double bottom, const std::string& label,
                  bool log) {
  std::string out = line(x.a, bottom, x.b, bottom);
  for (const double t : values) {
    out += line(x(t), bottom, x(t), bottom + 4);
    out += text(x(t), bottom + 16, num(log ? std::pow(10.0, t) : t), "middle");
  }
  out += text((x.a + x.b) / 2, bottom + 32, label, "middle");
  return out;
}

bool isNumber(const std::string& s, double& v) {
  if (s.empty()) return false;
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(v);
}

}  // namespace

std::string escape(std::string_view raw) {
  // An XHTML page is UTF-8 throughout, of the characters XML allows: U+FFFE and U+FFFF
  // (well-formed UTF-8, but no XML character) become U+FFFD too.
  std::string text = wellFormedUtf8(raw);
  for (const char* nonchar : {"\xef\xbf\xbe", "\xef\xbf\xbf"}) {
    for (size_t at = text.find(nonchar); at != std::string::npos; at = text.find(nonchar, at + 3)) {
      text.replace(at, 3, "\xef\xbf\xbd");
    }
  }
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        // Control characters other than tab and line breaks are not allowed in XML.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') {
          out += '?';
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string stackedBars(const std::vector<std::string>& labels, const std::vector<std::string>& parts,
                        const std::vector<std::vector<double>>& values, const std::string& unit) {
  constexpr double kLeft = 230, kRight = 30, kTop = 34, kBar = 16, kGap = 6;
  const double bottom = kTop + static_cast<double>(labels.size()) * (kBar + kGap);
  double most = 0;
  for (const std::vector<double>& v : values) {
    double total = 0;
    for (const double x : v) total += std::max(x, 0.0);
    most = std::max(most, total);
  }
  const Scale x{0, niceTop(most), kLeft, kWidth - kRight};
  std::string out = svgOpen(bottom + 44) + legend(parts, kLeft, 16);
  const std::vector<double> xt = ticks(0, x.hi, 6);
  for (const double t : xt) out += line(x(t), kTop - 4, x(t), bottom, "#e3e3e3");
  for (size_t i = 0; i < labels.size(); ++i) {
    const double y = kTop + static_cast<double>(i) * (kBar + kGap);
    out += text(kLeft - 6, y + kBar - 4, shorten(labels[i], 36), "end");
    double at = 0;
    for (size_t j = 0; j < parts.size() && j < values[i].size(); ++j) {
      const double v = std::max(values[i][j], 0.0);
      if (v <= 0) continue;
      out += rect(x(at), y, x(at + v) - x(at), kBar, colour(j), labels[i] + ": " + parts[j] + " " + num(v) + " " + unit);
      at += v;
    }
  }
  out += xAxis(x, xt, bottom, unit, false);
  return out + "</svg>\n";
}

std::string stripPlot(const std::vector<std::string>& categories, const std::vector<double>& ys,
                      const std::string& x_label, const std::string& y_label) {
  constexpr double kLeft = 70, kRight = 30, kTop = 14, kHeight = 220;
  std::vector<std::string> axis;
  for (const std::string& c : categories) {
    if (std::find(axis.begin(), axis.end(), c) == axis.end()) axis.push_back(c);
  }
  bool numeric = true;
  for (const std::string& c : axis) {
    double v = 0;
    numeric = numeric && isNumber(c, v);
  }
  if (numeric) {
    std::sort(axis.begin(), axis.end(), [](const std::string& a, const std::string& b) {
      return std::strtod(a.c_str(), nullptr) < std::strtod(b.c_str(), nullptr);
    });
  }
  double most = 0;
  for (const double v : ys) most = std::max(most, v);
  const Scale y{0, niceTop(most), kTop + kHeight, kTop};
  const double step = (kWidth - kLeft - kRight) / static_cast<double>(std::max<size_t>(axis.size(), 1));
  std::string out = svgOpen(kTop + kHeight + 46) + yAxis(y, ticks(0, y.hi, 5), kLeft, kWidth - kRight, y_label, false);
  const double bottom = kTop + kHeight;
  out += line(kLeft, bottom, kWidth - kRight, bottom);
  for (size_t k = 0; k < axis.size(); ++k) {
    out += text(kLeft + step * (static_cast<double>(k) + 0.5), bottom + 16, shorten(axis[k], 18), "middle");
  }
  out += text((kLeft + kWidth - kRight) / 2, bottom + 34, x_label, "middle");
  for (size_t i = 0; i < ys.size() && i < categories.size(); ++i) {
    const auto k = static_cast<double>(std::find(axis.begin(), axis.end(), categories[i]) - axis.begin());
    out += "<circle cx=\"" + px(kLeft + step * (k + 0.5)) + "\" cy=\"" + px(y(ys[i])) + "\" r=\"4\" fill=\"" +
           colour(0) + "\" fill-opacity=\"0.6\"><title>" + escape(categories[i] + ": " + num(ys[i])) +
           "</title></circle>\n";
  }
  return out + "</svg>\n";
}

Series cdf(std::string name, std::vector<double> values, size_t points) {
  std::sort(values.begin(), values.end());
  Series s{std::move(name), {}, {}};
  const size_t n = values.size();
  const size_t every = std::max<size_t>(1, (n + std::max<size_t>(points, 1) - 1) / std::max<size_t>(points, 1));
  for (size_t i = 0; i < n; ++i) {
    if ((i + 1) % every != 0 && i + 1 != n) continue;
    s.x.push_back(values[i]);
    s.y.push_back(static_cast<double>(i + 1) / static_cast<double>(n));
  }
  return s;
}

std::string lines(const std::vector<Series>& series, const std::string& x_label, const std::string& y_label,
                  bool log_x) {
  constexpr double kLeft = 70, kRight = 30, kTop = 34, kHeight = 240;
  auto xOf = [&](double v) { return log_x ? std::log10(v) : v; };
  double lo = std::numeric_limits<double>::infinity();
  double hi = -lo;
  double top = 0;
  // A point that cannot be drawn: not positive on a log axis, or not finite.
  auto skipped = [&](const Series& s, size_t i) {
    return (log_x && !(s.x[i] > 0)) || !std::isfinite(xOf(s.x[i])) || !std::isfinite(s.y[i]);
  };
  for (const Series& s : series) {
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (skipped(s, i)) continue;
      lo = std::min(lo, xOf(s.x[i]));
      hi = std::max(hi, xOf(s.x[i]));
      top = std::max(top, s.y[i]);
    }
  }
  if (!(hi >= lo)) lo = hi = 0;
  if (log_x) {
    lo = std::floor(lo);
    hi = std::max(std::ceil(hi), lo + 1);
  } else if (!(hi > lo)) {
    hi = lo + 1;
  }
  const Scale x{lo, hi, kLeft, kWidth - kRight};
  const Scale y{0, niceTop(top), kTop + kHeight, kTop};
  std::vector<std::string> names;
  for (const Series& s : series) names.push_back(s.name);
  std::string out = svgOpen(kTop + kHeight + 46) + legend(names, kLeft, 16) +
                    yAxis(y, ticks(0, y.hi, 5), kLeft, kWidth - kRight, y_label, false);
  std::vector<double> xt;
  if (log_x) {
    for (double t = lo; t <= hi + 1e-9; t += 1) xt.push_back(t);
  } else {
    xt = ticks(lo, hi, 6);
  }
  out += xAxis(x, xt, kTop + kHeight, x_label, log_x);
  for (size_t k = 0; k < series.size(); ++k) {
    std::string points;
    for (size_t i = 0; i < series[k].x.size(); ++i) {
      if (skipped(series[k], i)) continue;
      points += px(x(xOf(series[k].x[i]))) + "," + px(y(series[k].y[i])) + " ";
    }
    out += "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" + std::string(colour(k)) + "\" points=\"" + points +
           "\"><title>" + escape(series[k].name) + "</title></polyline>\n";
  }
  return out + "</svg>\n";
}

std::string heatmap(const std::vector<std::string>& rows, const std::vector<std::string>& columns,
                    const std::vector<std::vector<double>>& values, const std::string& x_label,
                    const std::string& y_label) {
  constexpr double kLeft = 110, kRight = 70, kTop = 14;
  const double cell_h = std::clamp(360.0 / static_cast<double>(std::max<size_t>(rows.size(), 1)), 3.0, 14.0);
  const double cell_w = (kWidth - kLeft - kRight) / static_cast<double>(std::max<size_t>(columns.size(), 1));
  const double bottom = kTop + cell_h * static_cast<double>(rows.size());
  auto shade = [](double v) {
    const double t = std::isnan(v) ? 0.0 : std::clamp(v, 0.0, 1.0);  // a cell without a figure: empty
    char buf[16];
    std::snprintf(buf, sizeof(buf), "#%02x%02x%02x", static_cast<int>(255 - t * (255 - 8)),
                  static_cast<int>(255 - t * (255 - 48)), static_cast<int>(255 - t * (255 - 107)));
    return std::string(buf);
  };
  std::string out = svgOpen(bottom + 46);
  const size_t label_every = std::max<size_t>(1, static_cast<size_t>(std::ceil(11.0 / cell_h)));
  for (size_t r = 0; r < rows.size(); ++r) {
    const double y = kTop + cell_h * static_cast<double>(r);
    if (r % label_every == 0) out += text(kLeft - 4, y + std::min(cell_h, 11.0) - 1, shorten(rows[r], 16), "end");
    for (size_t c = 0; c < columns.size() && c < values[r].size(); ++c) {
      if (values[r][c] <= 0) continue;
      out += rect(kLeft + cell_w * static_cast<double>(c), y, cell_w, cell_h, shade(values[r][c]),
                  rows[r] + " at " + columns[c] + ": " + num(values[r][c]));
    }
  }
  out += "<rect x=\"" + px(kLeft) + "\" y=\"" + px(kTop) + "\" width=\"" + px(kWidth - kLeft - kRight) +
         "\" height=\"" + px(bottom - kTop) + "\" fill=\"none\" stroke=\"#999\"/>\n";
  const size_t columns_every = std::max<size_t>(1, columns.size() / 6);
  for (size_t c = 0; c < columns.size(); c += columns_every) {
    out += text(kLeft + cell_w * (static_cast<double>(c) + 0.5), bottom + 16, columns[c], "middle");
  }
  out += text((kLeft + kWidth - kRight) / 2, bottom + 34, x_label, "middle");
  const double mid = (kTop + bottom) / 2;
  out += "<text x=\"12\" y=\"" + px(mid) + "\" text-anchor=\"middle\" transform=\"rotate(-90 12 " + px(mid) + ")\">" +
         escape(y_label) + "</text>\n";
  // Colour scale: 0 at the bottom, 1 at the top.
  for (int k = 0; k < 10; ++k) {
    const double y = kTop + (bottom - kTop) * (9 - k) / 10.0;
    out += rect(kWidth - kRight + 16, y, 14, (bottom - kTop) / 10.0, shade((k + 0.5) / 10.0));
  }
  out += text(kWidth - kRight + 34, kTop + 9, "1") + text(kWidth - kRight + 34, bottom, "0");
  return out + "</svg>\n";
}

}  // namespace mv::chart
