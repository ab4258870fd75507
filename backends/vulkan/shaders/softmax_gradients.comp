#version 450
// A softmax classifier's gradient SUMS over a batch, one invocation per output: the weight
// gradient sum_i x[i, f] d[i, c] at f * classes + c, the bias gradient sum_i d[i, c] after
// them, and then the batch's loss sum, real-item count and correct count (the learner's
// reduced buffer: parameters + 3 floats, overwritten).

layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) readonly buffer Inputs { float inputs[]; };
layout(std430, set = 0, binding = 1) readonly buffer Dlogits { float dlogits[]; };
layout(std430, set = 0, binding = 2) readonly buffer ItemStats { float item_stats[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Reduced { float reduced[]; };

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
  const uint weights = F * C;
  const uint parameter_count = weights + C;
  for (uint j = gl_GlobalInvocationID.x; j < parameter_count + 3; j += stride) {
    float sum = 0.0;
    if (j < weights) {
      const uint f = j / C;
      const uint c = j % C;
      for (uint i = 0; i < params.real_rows; ++i) sum += inputs[i * F + f] * dlogits[i * C + c];
    } else if (j < parameter_count) {
      const uint c = j - weights;
      for (uint i = 0; i < params.real_rows; ++i) sum += dlogits[i * C + c];
    } else if (j == parameter_count + 1) {
      sum = float(params.real_rows);
    } else {
      const uint k = j - parameter_count == 0 ? 0 : 1;  // loss sum, or correct count
      for (uint i = 0; i < params.real_rows; ++i) sum += item_stats[2 * i + k];
    }
    reduced[j] = sum;
  }
}
