#pragma once
/// @file
/// The synthetic climate data of examples/climate_shards: hourly fields on a lat x lon grid,
/// several variables, one file per month; the forecaster's batcher, which turns a window of
/// hours into features and the next hour's change into a class.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <numbers>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <stoke/learner.hpp>
#include <stoke/stoke.hpp>

namespace climate {

/// The shape of the data set.
struct Grid {
  std::size_t lat = 32;       ///< rows of the grid
  std::size_t lon = 64;       ///< columns of the grid
  std::size_t variables = 4;  ///< fields per hour (temperature first)
  std::size_t months = 24;    ///< files, one per month, from January of year 0
  std::size_t hours_per_month(std::size_t month) const {
    constexpr std::size_t days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return days[month % 12] * 24;
  }
  std::size_t values_per_hour() const { return variables * lat * lon; }
};

/// Variable `v` at hour `t` (since the first January) and cell (`y`, `x`): a daily cycle whose
/// phase moves with longitude, a yearly cycle stronger away from the equator, and noise.
inline float field(std::size_t v, std::size_t t, std::size_t y, std::size_t x, const Grid& grid,
                   stoke::SampleRng& noise) {
  const double pi = std::numbers::pi;
  const double hour = static_cast<double>(t % 24) / 24.0;
  const double year = static_cast<double>(t) / (24.0 * 365.0);
  const double lat = static_cast<double>(y) / static_cast<double>(grid.lat) - 0.5;
  const double lon = static_cast<double>(x) / static_cast<double>(grid.lon);
  const double daily = (1.0 + 0.25 * static_cast<double>(v)) *
                       std::sin(2 * pi * hour + 0.5 * pi * lon) * std::cos(pi * lat);
  const double yearly = 0.6 * std::sin(2 * pi * year) * 2 * std::abs(lat);
  const double jitter = (static_cast<double>(noise() % 2001) / 1000.0 - 1.0) * 0.05;
  return static_cast<float>(daily + yearly + jitter + 0.1 * static_cast<double>(v));
}

/// The file of `month` in `dir`.
inline std::filesystem::path month_file(const std::filesystem::path& dir, std::size_t month,
                                        const char* extension) {
  return dir / fmt::format("fields_y{}_m{:02}.{}", month / 12, month % 12 + 1, extension);
}

/// The fields of `month`: hours x variables x lat x lon floats.
inline std::vector<float> month_fields(std::size_t month, const Grid& grid) {
  std::size_t first_hour = 0;
  for (std::size_t m = 0; m < month; ++m) first_hour += grid.hours_per_month(m);
  std::vector<float> values;
  values.reserve(grid.hours_per_month(month) * grid.values_per_hour());
  for (std::size_t h = 0; h < grid.hours_per_month(month); ++h) {
    stoke::SampleRng noise(2024, month, h);
    for (std::size_t v = 0; v < grid.variables; ++v) {
      for (std::size_t y = 0; y < grid.lat; ++y) {
        for (std::size_t x = 0; x < grid.lon; ++x) {
          values.push_back(field(v, first_hour + h, y, x, grid, noise));
        }
      }
    }
  }
  return values;
}

/// The shape of `month`'s array.
inline stoke::ArrayInfo month_info(std::size_t month, const Grid& grid) {
  return {stoke::DType::f32, {grid.hours_per_month(month), grid.variables, grid.lat, grid.lon}};
}

/// The classes of the forecast: the next hour's mean temperature falls, stays, or rises.
inline constexpr std::size_t classes = 3;

/// Makes the forecaster's batch from windows of `hours + 1` consecutive hours: the features are
/// the spatial mean of every variable at each of the first `hours` hours; the class says how
/// the mean temperature changes from the last of them to the next.
struct ForecastBatcher {
  std::size_t hours = 24;       ///< hours the forecaster sees
  std::size_t variables = 4;    ///< fields per hour
  std::size_t cells = 16 * 32;  ///< grid cells per field
  float threshold = 0.05F;      ///< a change below this counts as "stays"

  /// Features per window.
  [[nodiscard]] std::size_t features() const { return hours * variables; }

  stoke::cpu::ClassificationBatch batch(std::vector<stoke::ArrayRow<float>> windows,
                                        const stoke::cpu::Device& device) const {
    stoke::cpu::Tensor<float> inputs({windows.size(), features()}, device);
    std::vector<std::int32_t> labels(windows.size());
    const std::size_t per_hour = variables * cells;
    for (std::size_t i = 0; i < windows.size(); ++i) {
      const std::span<const float> values = windows[i].values;
      if (values.size() != (hours + 1) * per_hour) {
        throw stoke::InputError(fmt::format("climate: a window holds {} values, expected {}",
                                            values.size(), (hours + 1) * per_hour));
      }
      const auto mean = [&](std::size_t hour, std::size_t v) {
        double sum = 0.0;
        for (const float value : values.subspan(hour * per_hour + v * cells, cells)) sum += value;
        return static_cast<float>(sum / static_cast<double>(cells));
      };
      const std::span<float> row = inputs.row(i);
      for (std::size_t h = 0; h < hours; ++h) {
        for (std::size_t v = 0; v < variables; ++v) row[h * variables + v] = mean(h, v);
      }
      const float change = mean(hours, 0) - mean(hours - 1, 0);
      labels[i] = change < -threshold ? 0 : change > threshold ? 2 : 1;
    }
    return {std::move(inputs), std::move(labels)};
  }
};

}  // namespace climate
