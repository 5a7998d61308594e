# ZKL_CHECK_CFLAG(FLAG, VARIABLE): append FLAG to VARIABLE if the C
# compiler accepts it (warnings made errors, so unknown flags are caught).
AC_DEFUN([ZKL_CHECK_CFLAG], [
  AC_MSG_CHECKING([whether $CC accepts $1])
  zkl_save_CFLAGS=$CFLAGS
  CFLAGS="$CFLAGS -Werror $1"
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])],
    [AC_MSG_RESULT([yes]); $2="$$2 $1"],
    [AC_MSG_RESULT([no])])
  CFLAGS=$zkl_save_CFLAGS
])
