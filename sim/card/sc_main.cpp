// SystemC's library refers to `sc_main` (its own `main` calls it). cardsim elaborates and starts
// its simulations itself (sim::simulate) from its own main and tests, so this one is never called;
// it exists to satisfy the link and says so if something does call it.

#include <cstdio>

extern "C" int sc_main(int, char*[]) {
    std::fputs("cardsim: sc_main is not an entry point; use the cardsim command\n", stderr);
    return 2;
}
