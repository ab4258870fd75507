#version 450
// One SGD step (heavy-ball momentum, L2 weight decay) on a parameter shard, with the
// gradient sums and the item count of the learner's reduced buffer:
//   g = reduced[i] * (1 / count); v = momentum v + (g + weight_decay p); p -= lr v.
// The learning rate and the history slot are push constants, or, where history_slot is
// READ_ON_DEVICE, the step table's row of the step counter and the counter itself, so the push
// constants are the same every step. With a count of zero nothing changes. Invocation 0 also copies the step's three sums into
// the history. The same expression, in the same order, as stoke::Sgd on the host.

layout(local_size_x = 256) in;

layout(std430, set = 0, binding = 0) buffer Parameters { float parameters[]; };
layout(std430, set = 0, binding = 1) buffer Velocity { float velocity[]; };
layout(std430, set = 0, binding = 2) readonly buffer Reduced { float reduced[]; };
layout(std430, set = 0, binding = 3) writeonly buffer History { float history[]; };
layout(std430, set = 0, binding = 4) readonly buffer Table {
  uint step;  // the step counter: the row and history slot of this step
  uint reserved[3];
  float rows[];  // 4 floats a step, the learning rate first
} table;

const uint READ_ON_DEVICE = 0xFFFFFFFFu;

layout(push_constant) uniform Params {
  uint parameter_count;  // gradients in the reduced buffer; the sums follow
  uint begin;            // first parameter stepped
  uint size;             // parameters stepped
  uint history_slot;     // the step's index in the epoch
  float learning_rate;
  float momentum;
  float weight_decay;
} params;

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  const uint tail = params.parameter_count;
  uint slot = params.history_slot;
  float learning_rate = params.learning_rate;
  if (slot == READ_ON_DEVICE) {  // the table is read only then
    slot = table.step;
    learning_rate = table.rows[4 * slot];
  }
  if (gl_GlobalInvocationID.x == 0) {
    for (uint k = 0; k < 3; ++k) history[3 * slot + k] = reduced[tail + k];
  }
  const float count = reduced[tail + 1];
  if (count <= 0.0) return;
  const float scale = 1.0 / count;
  for (uint i = gl_GlobalInvocationID.x; i < params.size; i += stride) {
    const uint p = params.begin + i;
    precise float g = reduced[p] * scale;
    precise float v = params.momentum * velocity[i] + (g + params.weight_decay * parameters[p]);
    velocity[i] = v;
    precise float updated = parameters[p] - learning_rate * v;
    parameters[p] = updated;
  }
}
