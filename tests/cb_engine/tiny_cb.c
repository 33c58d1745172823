/* A tiny engine with CheckerBoard's engine API (getmove / enginecommand / islegal), for the tests.
 *
 * Board: int board[8][8] indexed [x][y]; square 1 is (6, 0), Black (moves first) starts on
 * rows y = 0..2 and moves towards y = 7. It plays the first legal move it generates, or a random
 * one with "set mode random"; "set mode crash" makes getmove crash, "set mode illegal" makes it
 * move a man backwards, "set mode same" returns the board unchanged, "set mode spend" spends the
 * whole maxtime (wall clock) before it plays the first move, as an engine told the exact time does.
 * "set hashsize N" is accepted with an empty reply, as real engines answer it; other unknown
 * options are refused (return value 0).
 * "set logfile PATH" appends to PATH a line for every enginecommand, getmove and islegal call
 * it receives afterwards, with the arguments it saw (info, moreinfo and the times they hold).
 * Build: cc -shared -fPIC -o tiny_cb.so tiny_cb.c
 * -DTINY_GAMETYPE=22 makes it answer another "get gametype"; -DTINY_LEGACY_NAME makes it
 * refuse "name" and export the old enginename() instead.
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CB_WHITE 1
#define CB_BLACK 2
#define CB_MAN 4
#define CB_KING 8
#define CB_DRAW 0
#define CB_WIN 1
#define CB_LOSS 2
#define CB_UNKNOWN 3
#define CB_RESET_MOVES 1
#define CB_EXACT_TIME 2
#define CB_INCR_TIME_SHIFT 2
#ifndef TINY_GAMETYPE
#define TINY_GAMETYPE 21
#endif

struct coor { int x; int y; };
struct CBmove {
    int jumps, newpiece, oldpiece;
    struct coor from, to;
    struct coor path[12];
    struct coor del[12];
    int delpiece[12];
};

static char mode[64] = "first";
static unsigned seed = 12345;
static int games = 0;
static FILE *logfile = NULL;

/* The remaining time and increment in seconds that info/moreinfo carry; 0 without a clock. */
static int clock_times(int info, int moreinfo, double *remaining, double *increment) {
    static const double unit[4] = {0.0, 0.001, 0.01, 0.1};
    int mode = (info >> CB_INCR_TIME_SHIFT) & 3;
    unsigned packed = (unsigned)moreinfo;
    *remaining = (packed >> 16) * unit[mode];
    *increment = (packed & 0xffffu) * unit[mode];
    return mode;
}

typedef struct { int b[8][8]; } Pos;
static Pos found[256];
static int nfound;

static int on(int x, int y) { return x >= 0 && x < 8 && y >= 0 && y < 8; }
static int crown_row(int color) { return color == CB_BLACK ? 7 : 0; }

static void add(const Pos *p) { if (nfound < 256) found[nfound++] = *p; }

static void jumps(Pos *p, int x, int y, int color, int *any) {
    int piece = p->b[x][y], king = piece & CB_KING, dirs[4][2] = {{1,1},{-1,1},{1,-1},{-1,-1}}, more = 0;
    int forward = color == CB_BLACK ? 1 : -1;
    for (int d = 0; d < 4; d++) {
        int dx = dirs[d][0], dy = dirs[d][1];
        if (!king && dy != forward) continue;
        int mx = x + dx, my = y + dy, tx = x + 2 * dx, ty = y + 2 * dy;
        if (!on(tx, ty) || !p->b[mx][my] || (p->b[mx][my] & color) || p->b[tx][ty]) continue;
        Pos q = *p;
        q.b[tx][ty] = piece; q.b[x][y] = 0; q.b[mx][my] = 0;
        more = 1; *any = 1;
        if (!king && ty == crown_row(color)) { q.b[tx][ty] = color | CB_KING; add(&q); continue; }
        int before = nfound, dummy = 0;
        jumps(&q, tx, ty, color, &dummy);
        if (nfound == before) add(&q);
    }
    (void)more;
}

static void generate(int board[8][8], int color) {
    Pos p; int any = 0;
    memcpy(p.b, board, sizeof p.b);
    nfound = 0;
    for (int x = 0; x < 8; x++) for (int y = 0; y < 8; y++)
        if (p.b[x][y] & color) jumps(&p, x, y, color, &any);
    if (any) return;
    int forward = color == CB_BLACK ? 1 : -1;
    for (int x = 0; x < 8; x++) for (int y = 0; y < 8; y++) {
        int piece = p.b[x][y];
        if (!(piece & color)) continue;
        for (int dx = -1; dx <= 1; dx += 2) for (int dy = -1; dy <= 1; dy += 2) {
            if (!(piece & CB_KING) && dy != forward) continue;
            if (!on(x + dx, y + dy) || p.b[x + dx][y + dy]) continue;
            Pos q = p;
            q.b[x + dx][y + dy] = (!(piece & CB_KING) && y + dy == crown_row(color)) ? (color | CB_KING) : piece;
            q.b[x][y] = 0;
            add(&q);
        }
    }
}

int getmove(int board[8][8], int color, double maxtime, char str[1024], int *playnow, int info, int moreinfo,
            struct CBmove *move) {
    (void)playnow; (void)move;
    if (logfile) {
        double remaining, increment;
        int mode = clock_times(info, moreinfo, &remaining, &increment);
        fprintf(logfile, "getmove color=%d maxtime=%.6f info=%d moreinfo=%u reset=%d exact=%d unit=%d "
                "remaining=%.3f increment=%.3f\n", color, maxtime, info, (unsigned)moreinfo,
                info & CB_RESET_MOVES, (info & CB_EXACT_TIME) != 0, mode, remaining, increment);
        fflush(logfile);
    }
    if (info & CB_RESET_MOVES) games++;
    if (strcmp(mode, "crash") == 0) { volatile int *nowhere = NULL; *nowhere = 1; }
    if (strcmp(mode, "same") == 0) { strcpy(str, "thinking about nothing"); return CB_UNKNOWN; }
    if (strcmp(mode, "spend") == 0 && maxtime > 0) {
        struct timespec wait = {(time_t)maxtime, (long)((maxtime - (time_t)maxtime) * 1e9)};
        nanosleep(&wait, NULL);
    }
    if (strcmp(mode, "illegal") == 0) {
        for (int x = 0; x < 8; x++) for (int y = 0; y < 8; y++)
            if ((board[x][y] & color) && (board[x][y] & CB_MAN)) {
                int back = color == CB_BLACK ? -1 : 1;
                for (int dx = -1; dx <= 1; dx += 2)
                    if (on(x + dx, y + back) && !board[x + dx][y + back]) {
                        board[x + dx][y + back] = board[x][y]; board[x][y] = 0;
                        return CB_UNKNOWN;
                    }
            }
    }
    generate(board, color);
    if (nfound == 0) return CB_LOSS;
    int pick = 0;
    if (strcmp(mode, "random") == 0) { seed = seed * 1103515245u + 12345u; pick = (seed >> 16) % nfound; }
    memcpy(board, found[pick].b, sizeof found[pick].b);
    snprintf(str, 1024, "tiny: %d moves, game %d", nfound, games);
    return nfound == 1 ? CB_WIN : CB_UNKNOWN;
}

int enginecommand(char command[256], char reply[1024]) {
    char name[64], value[1024];
    if (logfile) { fprintf(logfile, "command %s\n", command); fflush(logfile); }
#ifndef TINY_LEGACY_NAME
    if (strcmp(command, "name") == 0) { strcpy(reply, "Tiny CB"); return 1; }
#endif
    if (strcmp(command, "about") == 0) { strcpy(reply, "a test engine"); return 1; }
    if (strcmp(command, "get gametype") == 0) { snprintf(reply, 1024, "%d", TINY_GAMETYPE); return 1; }
    if (strncmp(command, "set gamehist ", 13) == 0) { strcpy(reply, "ok"); return 1; }
    if (strcmp(command, "get protocolversion") == 0) { strcpy(reply, "2"); return 1; }
    if (sscanf(command, "set %63s %1023s", name, value) == 2) {
        if (strcmp(name, "logfile") == 0) {
            if (logfile) fclose(logfile);
            logfile = fopen(value, "a");
            strcpy(reply, logfile ? "ok" : "cannot open"); return logfile != NULL;
        }
        if (strcmp(name, "mode") == 0) { strcpy(mode, value); strcpy(reply, "ok"); return 1; }
        if (strcmp(name, "seed") == 0) { seed = (unsigned)atoi(value); strcpy(reply, "ok"); return 1; }
        if (strcmp(name, "hashsize") == 0) { reply[0] = 0; return 1; }
        strcpy(reply, "?"); return 0;
    }
    strcpy(reply, "?");
    return 0;
}

int islegal(int board[8][8], int color, int from, int to, struct CBmove *move) {
    (void)board; (void)move;
    if (logfile) { fprintf(logfile, "islegal color=%d from=%d to=%d\n", color, from, to); fflush(logfile); }
    return 0;
}

#ifdef TINY_LEGACY_NAME
int enginename(char str[255]) { strcpy(str, "Tiny legacy"); return 1; }
#endif
