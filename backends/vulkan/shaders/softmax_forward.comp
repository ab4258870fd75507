#version 450
// A softmax classifier's forward pass, one invocation per item: logits z = x W + b (W a
// features x classes row-major matrix, then the classes biases), softmax p, the item's loss
// log(sum exp(z - max)) - (z_y - max), whether the first arg-max is its label, and the
// gradient of the loss with respect to the logits, p - onehot(y). Padding items (index at or
// above real_rows, a push constant or the count on the device) get zeros.

layout(local_size_x = 64) in;

const uint MAX_CLASSES = 32;

layout(std430, set = 0, binding = 0) readonly buffer Inputs { float inputs[]; };
layout(std430, set = 0, binding = 1) readonly buffer Labels { int labels[]; };
layout(std430, set = 0, binding = 2) readonly buffer Parameters { float parameters[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Dlogits { float dlogits[]; };
layout(std430, set = 0, binding = 4) writeonly buffer ItemStats { float item_stats[]; };
layout(std430, set = 0, binding = 5) readonly buffer RealRows { uint count; } real_rows;

const uint READ_ON_DEVICE = 0xFFFFFFFFu;

layout(push_constant) uniform Params {
  uint rows;
  uint real_rows;
  uint features;
  uint classes;
} params;

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  const uint F = params.features;
  const uint C = params.classes;
  // The real rows: a push constant, or, where it is READ_ON_DEVICE, the batch's count on the
  // device (so the push constants are the same for a padded batch as for a full one).
  const uint real = params.real_rows == READ_ON_DEVICE ? real_rows.count : params.real_rows;
  for (uint i = gl_GlobalInvocationID.x; i < params.rows; i += stride) {
    if (i >= real) {
      for (uint c = 0; c < C; ++c) dlogits[i * C + c] = 0.0;
      item_stats[2 * i] = 0.0;
      item_stats[2 * i + 1] = 0.0;
      continue;
    }
    float z[MAX_CLASSES];
    for (uint c = 0; c < C; ++c) z[c] = 0.0;
    for (uint f = 0; f < F; ++f) {
      const float x = inputs[i * F + f];
      for (uint c = 0; c < C; ++c) z[c] += x * parameters[f * C + c];
    }
    float top = -3.402823466e38;
    uint best = 0;
    for (uint c = 0; c < C; ++c) {
      z[c] += parameters[F * C + c];
      if (z[c] > top) {
        top = z[c];
        best = c;
      }
    }
    float total = 0.0;
    for (uint c = 0; c < C; ++c) total += exp(z[c] - top);
    const uint y = uint(labels[i]);
    for (uint c = 0; c < C; ++c) {
      dlogits[i * C + c] = exp(z[c] - top) / total - (c == y ? 1.0 : 0.0);
    }
    item_stats[2 * i] = log(total) - (z[y] - top);
    item_stats[2 * i + 1] = best == y ? 1.0 : 0.0;
  }
}
