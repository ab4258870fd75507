#version 450
// One Adam step (decoupled weight decay) on a parameter shard, with the gradient sums
// and the item count of the learner's reduced buffer, as stoke::Adam on the host:
//   m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
//   p = p (1 - lr wd) - lr (m / c1) / (sqrt(v) / rc2 + eps).
// The bias corrections c1 and rc2 come from the host, computed in double as the host does:
// as push constants, or, where history_slot is READ_ON_DEVICE, from the step table's row of
// the step counter (learning rate, decay, c1, rc2; the counter is also the history slot), so
// the push constants are the same every step. With a count of zero nothing changes.
// Invocation 0 also copies the step's three sums into the history.

layout(local_size_x = 256) in;

layout(std430, set = 0, binding = 0) buffer Parameters { float parameters[]; };
layout(std430, set = 0, binding = 1) buffer First { float first[]; };
layout(std430, set = 0, binding = 2) buffer Second { float second[]; };
layout(std430, set = 0, binding = 3) readonly buffer Reduced { float reduced[]; };
layout(std430, set = 0, binding = 4) writeonly buffer History { float history[]; };
layout(std430, set = 0, binding = 5) readonly buffer Table {
  uint step;  // the step counter: the row and history slot of this step
  uint reserved[3];
  float rows[];  // 4 floats a step
} table;

const uint READ_ON_DEVICE = 0xFFFFFFFFu;

layout(push_constant) uniform Params {
  uint parameter_count;
  uint begin;
  uint size;
  uint history_slot;
  float learning_rate;
  float beta1;
  float beta2;
  float epsilon;
  float decay;             // 1 - learning_rate * weight_decay
  float correction1;       // 1 - beta1^t
  float root_correction2;  // sqrt(1 - beta2^t)
} params;

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  const uint tail = params.parameter_count;
  uint slot = params.history_slot;
  float learning_rate = params.learning_rate;
  float decay = params.decay;
  float correction1 = params.correction1;
  float root_correction2 = params.root_correction2;
  if (slot == READ_ON_DEVICE) {  // the table is read only then
    slot = table.step;
    learning_rate = table.rows[4 * slot];
    decay = table.rows[4 * slot + 1];
    correction1 = table.rows[4 * slot + 2];
    root_correction2 = table.rows[4 * slot + 3];
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
    precise float m = params.beta1 * first[i] + (1.0 - params.beta1) * g;
    precise float v = params.beta2 * second[i] + (1.0 - params.beta2) * (g * g);
    first[i] = m;
    second[i] = v;
    precise float step =
        learning_rate * (m / correction1) / (sqrt(v) / root_correction2 + params.epsilon);
    precise float updated = parameters[p] * decay - step;
    parameters[p] = updated;
  }
}
