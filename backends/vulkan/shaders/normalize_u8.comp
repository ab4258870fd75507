#version 450
// Turns a batch of uint8 pixels into normalised float32: out[i] = (in[i] / 255 - mean) / std.
// The bytes are read as packed 32-bit words, so no 8-bit storage feature is needed.

layout(local_size_x = 256) in;

layout(std430, set = 0, binding = 0) readonly buffer Bytes {
  uint words[];
};

layout(std430, set = 0, binding = 1) writeonly buffer Values {
  float values[];
};

layout(push_constant) uniform Params {
  uint count;    // number of pixels
  float mean;    // subtracted after scaling to [0, 1]
  float stddev;  // then divided by
} params;

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < params.count; i += stride) {
    const uint byte_value = (words[i >> 2] >> ((i & 3u) * 8u)) & 0xFFu;
    values[i] = (float(byte_value) / 255.0 - params.mean) / params.stddev;
  }
}
