#version 450
// Does nothing: measures dispatch overhead (the same kernel as vkfloor's).
layout(local_size_x = 64) in;
void main() {}
