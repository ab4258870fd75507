#version 450
// A softmax classifier's gradient SUMS over a batch, one invocation per output: the weight
// gradient sum_i x[i, f] d[i, c] at f * classes + c, the bias gradient sum_i d[i, c] after
// them, and then the batch's loss sum, real-item count and correct count (the learner's
// reduced buffer: parameters + 3 floats, overwritten). The real rows are a push constant or
// the batch's count on the device.

layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) readonly buffer Inputs { float inputs[]; };
layout(std430, set = 0, binding = 1) readonly buffer Dlogits { float dlogits[]; };
layout(std430, set = 0, binding = 2) readonly buffer ItemStats { float item_stats[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Reduced { float reduced[]; };
layout(std430, set = 0, binding = 4) readonly buffer RealRows { uint count; } real_rows;

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
  const uint weights = F * C;
  const uint parameter_count = weights + C;
  for (uint j = gl_GlobalInvocationID.x; j < parameter_count + 3; j += stride) {
    float sum = 0.0;
    if (j < weights) {
      const uint f = j / C;
      const uint c = j % C;
      for (uint i = 0; i < real; ++i) sum += inputs[i * F + f] * dlogits[i * C + c];
    } else if (j < parameter_count) {
      const uint c = j - weights;
      for (uint i = 0; i < real; ++i) sum += dlogits[i * C + c];
    } else if (j == parameter_count + 1) {
      sum = float(real);
    } else {
      const uint k = j - parameter_count == 0 ? 0 : 1;  // loss sum, or correct count
      for (uint i = 0; i < real; ++i) sum += item_stats[2 * i + k];
    }
    reduced[j] = sum;
  }
}
