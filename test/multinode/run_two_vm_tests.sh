#!/usr/bin/env bash
# test/multinode/run_two_vm_tests.sh: MPI jobs across two Soft-RoCE VMs
# (docs/multinode.md, "Two VMs"). contrib/rxe-vm/run-two-rxe-vms.sh boots vmA
# and vmB joined by a virtual Ethernet link, rxe0 on it in each; in vmA,
# test/multinode/two_vm_guest.sh runs:
#
# 1. ibv_rc_pingpong between the VMs' rxe0 (verbs across), and the MPI
#    programs' plumbing with stock Open MPI (ob1, btl tcp), one rank per VM;
# 2. the MPI test programs over the weft MTL with WEFT_TRANSPORTS=self,verbs,
#    one rank per VM, and mpi_p2p on two ranks per VM with every transport
#    (shm within a VM, verbs across; the pairs' transports printed);
# 3. with a tcp transport in the build, the same over tcp across; without it,
#    a visible SKIP line for that part (the rest still counts).
#
# Programs are built on the host (make check-two-vm builds them); the VMs run
# the host's userland. Run from the top of a build directory.
#
# Exit status (automake's): 0 passed; 77 skipped, with the reason (not root,
# not x86_64, no qemu or kernel, WEFT_TEST_TWO_VM=0); anything else failed.
#
# Cost: about 5 minutes on a 2-core host under emulation (no KVM), most of
# it mpi_many's 64 MiB messages over the emulated link (docs/multinode.md).
#
# Environment: WEFT_TEST_TWO_VM=0 skips it, WEFT_TEST_TWO_VM_SCRIPT (the VM
# script), WEFT_TEST_TWO_VM_TIMEOUT (seconds, whole run, default 2400),
# WEFT_MPI_RUN_TIMEOUT (per MPI run in the VMs, default 600).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=${WEFT_BUILD_DIR:-${top_builddir:-.}}
build=$(cd "$build" && pwd)
vms=${WEFT_TEST_TWO_VM_SCRIPT:-$top/contrib/rxe-vm/run-two-rxe-vms.sh}
timeout=${WEFT_TEST_TWO_VM_TIMEOUT:-2400}

skip() {
    echo "SKIP: two-VM tests not run: $*"
    exit 77
}
[ "${WEFT_TEST_TWO_VM:-1}" != 0 ] || skip "WEFT_TEST_TWO_VM=0"
[ -x "$vms" ] || skip "no VM script at $vms"
[ "$(id -u)" = 0 ] || skip "booting the Soft-RoCE VMs needs root"
[ "$(uname -m)" = x86_64 ] || skip "the Soft-RoCE VMs run on x86_64 hosts only"
command -v mpirun >/dev/null 2>&1 || skip "mpirun not found (install openmpi-bin)"
[ -f "$build/.libs/mca_mtl_weft.so" ] || skip "$build/.libs/mca_mtl_weft.so not built"
for p in weft_info test/mpi/mpi_p2p test/mpi/mpi_many test/mpi/mpi_coll test/mpi/mpi_thread \
    test/mpi/mpi_osc; do
    [ -x "$build/$p" ] || {
        echo "FAIL: $build/$p is not built (make check-two-vm builds it)"
        exit 1
    }
done

echo "run_two_vm_tests: booting two Soft-RoCE VMs ($vms), limit ${timeout}s"
start=$SECONDS
"$vms" -q -C "$build" -t "$timeout" -e WEFT_MPI_RUN_TIMEOUT="${WEFT_MPI_RUN_TIMEOUT:-600}" \
    -- bash "$here/two_vm_guest.sh" "$build"
st=$?
took=$((SECONDS - start))
case $st in
    0) echo "run_two_vm_tests: every check passed across the two VMs ($took s)" ;;
    77) skip "the VMs cannot run here (see the message above)" ;;
    124) echo "FAIL: the VMs hit their ${timeout}s limit" ;;
    125) echo "FAIL: a VM failed before the tests finished ($took s)" ;;
    *) echo "FAIL: checks failed across the two VMs (exit $st, $took s)" ;;
esac
exit "$st"
