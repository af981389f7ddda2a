/* Never terminates. */
int main(void) {
    volatile int keep_going = 1;
    while (keep_going) {
    }
    return 0;
}
