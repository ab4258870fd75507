#version 450
// Adds a softmax classifier batch's loss sum, real-item count and correct count to three
// running sums (validation, read once an epoch). One invocation.

layout(local_size_x = 1) in;

layout(std430, set = 0, binding = 0) readonly buffer ItemStats { float item_stats[]; };
layout(std430, set = 0, binding = 1) buffer Sums { float sums[]; };

layout(push_constant) uniform Params {
  uint rows;
  uint real_rows;
  uint features;
  uint classes;
} params;

void main() {
  if (gl_GlobalInvocationID.x != 0) return;
  float loss = 0.0;
  float correct = 0.0;
  for (uint i = 0; i < params.real_rows; ++i) {
    loss += item_stats[2 * i];
    correct += item_stats[2 * i + 1];
  }
  sums[0] += loss;
  sums[1] += float(params.real_rows);
  sums[2] += correct;
}
