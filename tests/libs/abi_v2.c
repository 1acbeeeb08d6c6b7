/* Version 2 of libgtabi.so.1: drops gt_abi_b (an ABI break under the same soname), grows
 * gt_abi_table, adds gt_abi_d under GTABI_2.0 (abi_v2.map). */
int gt_abi_table[8] = {1, 2, 3, 4, 5, 6, 7, 8};
int gt_abi_a(int x) { return x + 1; }
int gt_abi_c(int x) { return x - 1; }
int gt_abi_d(int x) { return x * 3; }
