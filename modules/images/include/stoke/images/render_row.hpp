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

/// Decodes `item`, draws its augmentation from `rng` (`prepare_image`) and renders it
/// (`render`: crop, resize and colour jitter, WITHOUT the flip) into `out_hwc`, an
/// `augmentation.height() x augmentation.width() x options.channels` HWC byte image; returns
/// the draw, whose `flip` says whether the row is still to be mirrored. Throws `InputError`
/// naming `item.source` when it cannot be decoded, and `UsageError` when `out_hwc` is not as
/// long as that image or the channels are not 1 or 3.
inline AugmentDraw render_row_bytes(const EncodedImage& item, const Augmentation& augmentation,
                                    const PrepareOptions& options, SampleRng rng,
                                    std::span<std::uint8_t> out_hwc) {
  const PreparedImage prepared =
      prepare_image(item, augmentation, options, rng, detail::thread_decode_scratch());
  render(prepared.image, prepared.draw,
         ImageShape{augmentation.height(), augmentation.width(), options.channels}, out_hwc);
  return prepared.draw;
}

}  // namespace stoke::images
