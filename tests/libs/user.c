/* libgtuser.so: uses gt_abi_a and gt_abi_b of libgtabi.so.1 (linked against version 1), and
 * needs libgtgone.so, which the tests leave out of some layouts (a missing dependency). */
int gt_abi_a(int);
int gt_abi_b(int);
int gt_gone(void);
int gt_user(int x) { return gt_abi_a(x) + gt_abi_b(x) + gt_gone(); }
