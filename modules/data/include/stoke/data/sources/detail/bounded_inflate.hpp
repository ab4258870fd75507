#pragma once
/// @file
/// `inflate_some`: one bounded round of zlib's inflate into a growing buffer, shared by the
/// readers of compressed files (gzip IDX files, deflated npz members), so that a small input
/// cannot make them allocate more than the data it really inflates to.

#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

namespace stoke::detail {

/// Inflates some of `compressed` (from `consumed` on) into `out`, which grows by doubling,
/// 1 MiB at most, and never past `want` bytes; advances `consumed` by the bytes zlib took and
/// returns zlib's result (`Z_OK`, `Z_STREAM_END`, `Z_BUF_ERROR` or an error).
template <class Byte>
int inflate_some(z_stream& stream, std::span<const std::byte> compressed, std::size_t& consumed,
                 std::vector<Byte>& out, std::size_t want) {
  static_assert(sizeof(Byte) == 1);
  constexpr std::size_t chunk = std::size_t{1} << 20U;
  const std::size_t filled = out.size();
  const std::size_t room =
      std::min({want - filled, std::max<std::size_t>(filled, std::size_t{1} << 16U), chunk});
  out.resize(filled + room);
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(compressed.data())) + consumed;
  stream.avail_in = static_cast<uInt>(std::min(compressed.size() - consumed, chunk));
  stream.next_out = reinterpret_cast<Bytef*>(out.data() + filled);
  stream.avail_out = static_cast<uInt>(room);
  const uInt in_before = stream.avail_in;
  const int result = inflate(&stream, Z_NO_FLUSH);
  out.resize(filled + room - stream.avail_out);
  consumed += in_before - stream.avail_in;
  return result;
}

}  // namespace stoke::detail
