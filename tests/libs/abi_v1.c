/* Version 1 of libgtabi.so.1 (tests of `gputriage libs`): three functions and one object under
 * the symbol version GTABI_1.0 (abi_v1.map). */
int gt_abi_table[4] = {1, 2, 3, 4};
int gt_abi_a(int x) { return x + 1; }
int gt_abi_b(int x) { return x * 2; }
int gt_abi_c(int x) { return x - 1; }
