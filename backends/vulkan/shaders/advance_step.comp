#version 450
// Advances the step table's counter (word 0) by one: the last work of a learner's step, so
// the next step reads the next row of the table and writes the next history slot. One
// invocation.

layout(local_size_x = 1) in;

layout(std430, set = 0, binding = 0) buffer Table { uint step; } table;

void main() {
  if (gl_GlobalInvocationID.x == 0) table.step += 1;
}
