/* tests/cudaemu/cudaemu_switch.S — the fiber switch of the CUDA emulator (x86-64 System V).
 *
 * void cudaemu_switch(void **save_sp, void *to_sp): pushes the callee-saved registers, stores the stack
 * pointer in *save_sp, loads to_sp and pops the same six registers from there, then returns into whatever
 * that stack was doing. A fresh fiber's stack is prepared (cudaemu.cpp) so that the pops read zeros and the
 * return lands on its entry function. The caller-saved registers need no saving: this is a call.
 */
    .text
    .globl cudaemu_switch
    .type cudaemu_switch, @function
cudaemu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size cudaemu_switch, .-cudaemu_switch
    .section .note.GNU-stack,"",@progbits
