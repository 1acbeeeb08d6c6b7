/* libgtgone.so: a dependency the tests remove to make it missing. */
int gt_gone(void) { return 0; }
