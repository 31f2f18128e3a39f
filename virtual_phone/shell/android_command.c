/* An Android program of the virtual phone (am, pm, settings, input, uiautomator, ...) inside its sandbox.
 *
 * Every such name in the phone's /system/bin is a link to this one program. It asks the phone process, over
 * the unix socket /dev/socket/virtual_phone, to run the command named by argv[0], handing it this process's
 * stdin, stdout and stderr; the phone writes the command's output straight to them and answers with the exit
 * status, which this program exits with. On Android the same programs talk to system services over binder.
 *
 * Request (one SOCK_SEQPACKET message): the working directory, the user `su` chose ($VIRTUAL_PHONE_UID, or
 * empty: adbd's user), then each argument, each ending in '\0'; the three fds ride along as SCM_RIGHTS.
 * Answer: the exit status as decimal text.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define SOCKET_PATH "/dev/socket/virtual_phone"
#define MAX_REQUEST 65536

int main(int argc, char **argv) {
    static char request[MAX_REQUEST];
    size_t used = 0;
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd) == NULL) strcpy(cwd, "/");
    const char *name = strrchr(argv[0], '/');
    name = name ? name + 1 : argv[0];
    const char *uid = getenv("VIRTUAL_PHONE_UID");
    for (int i = -2; i < argc; i++) {
        const char *part = i == -2 ? cwd : i == -1 ? (uid ? uid : "") : i == 0 ? name : argv[i];
        size_t n = strlen(part) + 1;
        if (used + n > sizeof request) {
            fprintf(stderr, "%s: argument list too long\n", name);
            return 7;
        }
        memcpy(request + used, part, n);
        used += n;
    }

    int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    strncpy(addr.sun_path, SOCKET_PATH, sizeof addr.sun_path - 1);
    if (sock < 0 || connect(sock, (struct sockaddr *)&addr, sizeof addr) < 0) {
        fprintf(stderr, "%s: can't reach the phone's services: %s\n", name, strerror(errno));
        return 255;
    }

    int fds[3] = {0, 1, 2};
    union {
        char buf[CMSG_SPACE(sizeof fds)];
        struct cmsghdr align;
    } control;
    struct iovec iov = {.iov_base = request, .iov_len = used};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                         .msg_controllen = sizeof control.buf};
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof fds);
    memcpy(CMSG_DATA(cmsg), fds, sizeof fds);
    if (sendmsg(sock, &msg, 0) < 0) {
        fprintf(stderr, "%s: can't reach the phone's services: %s\n", name, strerror(errno));
        return 255;
    }

    char answer[32];
    ssize_t n = recv(sock, answer, sizeof answer - 1, 0);
    if (n <= 0) {
        fprintf(stderr, "%s: the phone did not answer\n", name);
        return 255;
    }
    answer[n] = '\0';
    return atoi(answer);
}
