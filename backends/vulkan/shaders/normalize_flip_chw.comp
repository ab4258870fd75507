#version 450
// Turns a batch of HWC uint8 images into normalised CHW float32 rows, mirroring the rows whose
// flip is set: values[((n * C + c) * H + y) * W + x] = tables[c * 256 + byte], byte being
// channel c of pixel (y, flip[n] ? W - 1 - x : x) of image n. The tables are the host's
// (stoke::images::Normalization), so the values equal the CPU batcher's bit for bit. The
// bytes and flips are read as packed 32-bit words, so no 8-bit storage feature is needed.

layout(local_size_x = 256) in;

// The images' bytes, image after image, then at word `flips` one uint per image (non-zero:
// mirror it left to right).
layout(std430, set = 0, binding = 0) readonly buffer Staged {
  uint words[];
};

// 256 floats a channel: what each byte value of that channel becomes.
layout(std430, set = 0, binding = 1) readonly buffer Tables {
  float tables[];
};

layout(std430, set = 0, binding = 2) writeonly buffer Values {
  float values[];
};

layout(push_constant) uniform Params {
  uint rows;      // images
  uint height;    // of each image
  uint width;     // of each image
  uint channels;  // 1 or 3
  uint flips;     // word offset of the flips in `words`
} params;

void main() {
  const uint plane = params.height * params.width;
  const uint row_size = plane * params.channels;
  const uint count = params.rows * row_size;
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < count; i += stride) {
    const uint n = i / row_size;
    const uint in_row = i - n * row_size;
    const uint c = in_row / plane;
    const uint in_plane = in_row - c * plane;
    const uint y = in_plane / params.width;
    uint x = in_plane - y * params.width;
    if (words[params.flips + n] != 0u) x = params.width - 1u - x;
    const uint b = n * row_size + (y * params.width + x) * params.channels + c;
    const uint byte_value = (words[b >> 2] >> ((b & 3u) * 8u)) & 0xFFu;
    values[i] = tables[c * 256u + byte_value];
  }
}
