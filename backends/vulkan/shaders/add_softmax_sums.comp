#version 450
// Adds a softmax classifier batch's loss sum, real-item count and correct count to three
// running sums (validation, read once an epoch). One invocation. The real rows are a push
// constant or the batch's count on the device.

layout(local_size_x = 1) in;

layout(std430, set = 0, binding = 0) readonly buffer ItemStats { float item_stats[]; };
layout(std430, set = 0, binding = 1) buffer Sums { float sums[]; };
layout(std430, set = 0, binding = 2) readonly buffer RealRows { uint count; } real_rows;

const uint READ_ON_DEVICE = 0xFFFFFFFFu;

layout(push_constant) uniform Params {
  uint rows;
  uint real_rows;
  uint features;
  uint classes;
} params;

void main() {
  if (gl_GlobalInvocationID.x != 0) return;
  // The real rows: a push constant, or, where it is READ_ON_DEVICE, the batch's count on the
  // device (so the push constants are the same for a padded batch as for a full one).
  const uint real = params.real_rows == READ_ON_DEVICE ? real_rows.count : params.real_rows;
  float loss = 0.0;
  float correct = 0.0;
  for (uint i = 0; i < real; ++i) {
    loss += item_stats[2 * i];
    correct += item_stats[2 * i + 1];
  }
  sums[0] += loss;
  sums[1] += float(real);
  sums[2] += correct;
}
