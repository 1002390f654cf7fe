// The executable that makes the precompiled GoogleTest headers every test binary reuses
// (tests/CMakeLists.txt, uroce_test_pch). It runs nothing.
int main() { return 0; }
