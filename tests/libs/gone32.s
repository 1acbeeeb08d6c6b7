# A 32-bit (i386) shared object named like a 64-bit one: the loader skips it ("wrong ELF class").
.globl gt_gone
gt_gone:
  ret
