// targets/registry.cpp: STUB, to be replaced.
