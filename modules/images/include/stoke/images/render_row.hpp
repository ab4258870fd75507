#pragma once
/// @file
/// `render_row_bytes`: one row of an augmenting image batcher as HWC bytes, decoded, drawn
/// from the row's own random stream and rendered (crop, resize, colour jitter) but not yet
/// flipped nor normalised. The CPU batcher normalises those bytes on the host; the device
/// batchers upload them and flip and normalise on the device.

#include <cstdint>
#include <span>
#include <vector>

#include <stoke/core/rng.hpp>
#include <stoke/images/augment_draw.hpp>
#include <stoke/images/augmentation.hpp>
#include <stoke/images/image.hpp>
#include <stoke/images/prepared_image.hpp>
#include <stoke/images/render.hpp>

namespace stoke::images {

namespace detail {

/// The decoded pixels of the row a thread renders (`prepare_image`'s scratch), one per thread.
[[nodiscard]] inline std::vector<std::uint8_t>& thread_decode_scratch() {
  thread_local std::vector<std::uint8_t> scratch;
  return scratch;
}

}  // namespace detail

/// Decodes `item` (the region its crop reads), draws its augmentation from `rng`
/// (`prepare_image`) and renders it (`render`: crop, resize and colour jitter, WITHOUT the
/// flip) into `out_hwc`, an `augmentation.height() x augmentation.width() x
/// options.channels` HWC byte image; returns the draw, whose `flip` says whether the row is
/// still to be mirrored. An image already of
/// the output shape, taken whole without colour jitter, is decoded straight into `out_hwc`
/// (`renders_as_decoded`): rendering it would copy it unchanged. Throws `InputError`
/// naming `item.source` when it cannot be decoded, and `UsageError` when `out_hwc` is not as
/// long as that image or the channels are not 1 or 3.
inline AugmentDraw render_row_bytes(const EncodedImage& item, const Augmentation& augmentation,
                                    const PrepareOptions& options, SampleRng rng,
                                    std::span<std::uint8_t> out_hwc) {
  const ImageShape out{augmentation.height(), augmentation.width(), options.channels};
  const DecodePlan plan = plan_decode(item, augmentation, options, rng);
  if (renders_as_decoded(plan, out) && out_hwc.size() == out.bytes()) {
    // The shape is known and nothing moves: decode straight into the row (staging memory).
    decode_into(item.bytes, item.source, plan.info, out, out_hwc);
    return plan.draw;
  }
  const RegionView decoded = decode_planned(item, plan, detail::thread_decode_scratch());
  render(decoded, plan.draw, out, out_hwc);
  return plan.draw;
}

}  // namespace stoke::images
