/* A program with DT_RUNPATH $ORIGIN/../lib that needs libgtuser.so (tests of `gputriage libs`). */
int gt_user(int);
int main(int argc, char** argv) {
  (void)argv;
  return gt_user(argc) == -12345;
}
