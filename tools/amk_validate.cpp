// tools/amk_validate.cpp: STUB, to be replaced.
int main() { return 2; }
