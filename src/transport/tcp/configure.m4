dnl The tcp transport's part of configure (found by autogen.sh).
AC_DEFUN([WEFT_CONFIGURE_TRANSPORT_TCP], [
AC_ARG_ENABLE([tcp],
    [AS_HELP_STRING([--enable-tcp=yes|no],
                    [the tcp transport: TCP sockets driven by epoll (default yes)])],
    [], [enable_tcp=yes])
weft_tcp=no
AS_IF([test "x$enable_tcp" != xno],
      [AC_CHECK_HEADERS([sys/epoll.h ifaddrs.h], [weft_tcp=yes],
                        [weft_tcp=no; break])])
AS_IF([test "x$enable_tcp" = xyes && test "x$weft_tcp" = xno],
      [AC_MSG_ERROR([--enable-tcp=yes, but sys/epoll.h or ifaddrs.h is missing (Linux only)])])
AS_IF([test "x$weft_tcp" = xyes],
      [AC_DEFINE([WEFT_TRANSPORT_TCP], [1], [the tcp transport is built])
       weft_transports="$weft_transports tcp"])
AM_CONDITIONAL([WEFT_TRANSPORT_TCP], [test "x$weft_tcp" = xyes])
])
