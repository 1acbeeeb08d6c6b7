// A shared library built without debug information, to crash inside.
#pragma once
void crashlib_store(int* target, int value);
void* crashlib_spin(void* millis);
