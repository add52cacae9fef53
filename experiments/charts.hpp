/**
 * @file charts.hpp
 * Charts as inline SVG for `multiverse report` (docs/report.md): each function returns one
 * self-contained `<svg>` element (no scripts, no external fonts or files), so a page made of
 * them opens offline in any browser and is well-formed XML.
 */
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace mv::chart {

/// `text` with the characters XML and HTML treat specially replaced by entities.
std::string escape(std::string_view text);

/// One named line of points (x ascending).
struct Series {
  std::string name;
  std::vector<double> x;
  std::vector<double> y;
};

/// Horizontal stacked bars, one per label (top to bottom), one segment per part:
/// values[i][j] is part j of bar i, in `unit`; a legend names the parts.
std::string stackedBars(const std::vector<std::string>& labels, const std::vector<std::string>& parts,
                        const std::vector<std::vector<double>>& values, const std::string& unit);

/// One point per y value above its category on the x axis (categories[i] is ys[i]'s; the
/// axis lists the distinct categories in first-seen order, or ascending when all are
/// numbers): how a swept key's values spread a result.
std::string stripPlot(const std::vector<std::string>& categories, const std::vector<double>& ys,
                      const std::string& x_label, const std::string& y_label);

/// Lines through each series' points with a legend; a logarithmic x axis when `log_x`
/// (points at x <= 0 are then left out). For cumulative distributions: y from 0 to 1.
std::string lines(const std::vector<Series>& series, const std::string& x_label, const std::string& y_label,
                  bool log_x);

/// The empirical cumulative distribution of `values` as a series (x sorted, y = i / n), at
/// most `points` points of it (evenly spaced in rank, the largest value always kept).
Series cdf(std::string name, std::vector<double> values, size_t points = 400);

/// A heat map: cell (r, c) coloured by values[r][c] in [0, 1] from white to dark blue, rows
/// labelled by `rows`, columns by `columns` (a few of them shown).
std::string heatmap(const std::vector<std::string>& rows, const std::vector<std::string>& columns,
                    const std::vector<std::vector<double>>& values, const std::string& x_label,
                    const std::string& y_label);

}  // namespace mv::chart
