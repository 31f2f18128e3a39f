/* Starts a program of the phone's sandbox as one of Android's users; the sandbox's zygote (zygote.py) runs
 * it with posix_spawn, which cannot change users itself (and a fork of the zygote's Python costs
 * milliseconds).
 *
 * usage: spawn_as UID CWD TTY PROGRAM [ARG...]
 *   UID  the user (and group) to become, with adbd's supplementary groups; "-" to stay who it is
 *   CWD  the folder to start in (entered before the change: a folder only the caller could enter is kept)
 *   TTY  "1": fd 0 is a terminal that becomes the controlling tty of the new session
 * PROGRAM without a '/' is looked up in $PATH. If it cannot start: "PROGRAM: reason" on stderr, exit 127.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* adbd's groups (packages/modules/adb/daemon/main.cpp drop_privileges): adb, log, input, inet, net_bt,
 * net_bt_admin, sdcard_r, sdcard_rw, net_bw_stats, readproc, uhid, ext_data_rw, ext_obb_rw, readtracefs. */
static const gid_t ADBD_GROUPS[] = {1011, 1007, 1004, 3003, 3002, 3001, 1028, 1015, 3006, 3009, 3011, 1078, 1079, 3012};

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: spawn_as UID CWD TTY PROGRAM [ARG...]\n");
        return 127;
    }
    if (strcmp(argv[3], "1") == 0) ioctl(0, TIOCSCTTY, 0);
    if (chdir(argv[2]) != 0) { /* keep the folder it has */ }
    if (strcmp(argv[1], "-") != 0) {
        uid_t uid = (uid_t)strtoul(argv[1], NULL, 10);
        if (setgroups(sizeof ADBD_GROUPS / sizeof ADBD_GROUPS[0], ADBD_GROUPS) != 0 ||
            setresgid(uid, uid, uid) != 0 || setresuid(uid, uid, uid) != 0) {
            fprintf(stderr, "%s: %s\n", argv[4], strerror(errno));
            return 127;
        }
    }
    execvp(argv[4], argv + 4);
    fprintf(stderr, "%s: %s\n", argv[4], strerror(errno));
    return 127;
}
