#!/usr/bin/env bash
# Run every verbs test for real: boot a throw-away VM with two Soft-RoCE devices
# (contrib/rxe-vm/run-in-rxe-vm.sh; rxe0 and rxe1 on the two ends of a veth pair)
# and run, inside it, the verbs-specific tests, the transport conformance suite
# and the generic transport suites
# instantiated over verbs (rank r uses port r mod 2, so traffic crosses devices).
# Then the MPI test programs over the weft MTL with WEFT_TRANSPORTS=self,verbs
# (test/mpi/run_mpi_tests.sh: 2 and 4 ranks, one rxe port), and the OpenSHMEM
# test programs the same way (test/shmem/check_shmem.sh, 2 PEs). Programs are built on
# the host; the guest runs the host's userland.
#
# Exit status (automake's test protocol): 0 all passed; 77 skipped, with the reason
# printed, when the VM cannot run here (not root, no qemu/kernel, no x86_64);
# anything else failed (a test, the VM itself, or the time limit).
#
# Environment: WEFT_RXE_VM (the VM script), WEFT_VERBS_VM_TIMEOUT (seconds, whole
# run), WEFT_VERBS_VM_FILTER (extra gtest filter, e.g. '*ping_pong*').
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
build=$(pwd)
vm=${WEFT_RXE_VM:-$top/contrib/rxe-vm/run-in-rxe-vm.sh}
timeout=${WEFT_VERBS_VM_TIMEOUT:-3000}
filter=${WEFT_VERBS_VM_FILTER:-*}

skip() { echo "SKIP: verbs tests not run: $*"; exit 77; }
[ -x "$vm" ] || skip "no VM script at $vm"
[ "$(id -u)" = 0 ] || skip "booting the Soft-RoCE VM needs root"
[ "$(uname -m)" = x86_64 ] || skip "the Soft-RoCE VM runs on x86_64 hosts only"
for p in test_verbs test_conformance test_transport test_variable test_credit_flow; do
    [ -x "$build/$p" ] || { echo "FAIL: $build/$p is not built (make check-verbs builds it)"; exit 1; }
done

# The guest part: each suite with its verbs tests only; every result is printed.
guest=$(cat <<GUEST
set -u
echo "guest: \$(uname -r), \$(nproc) cpus, devices: \$(ibv_devices | awk 'NR>2{print \$1}' | tr '\n' ' ')"
rc=0
run() {
    name=\$1; shift
    start=\$(date +%s)
    "./\$name" --gtest_color=no "\$@" 2>&1
    st=\$?
    echo "guest: \$name exit \$st in \$(( \$(date +%s) - start )) s"
    [ \$st -eq 0 ] || rc=1
}
run test_verbs --gtest_filter='$filter'
run test_conformance --gtest_filter='*/verbs'
run test_transport --gtest_filter='*/verbs'
run test_variable --gtest_filter='*/verbs'
run test_credit_flow --gtest_filter='*/verbs'
# MPI programs over the weft MTL with verbs as the only transport between ranks.
if [ -f ./.libs/mca_mtl_weft.so ] && [ -x ./test/mpi/mpi_p2p ] && command -v mpirun >/dev/null; then
    start=\$(date +%s)
    WEFT_TRANSPORTS=self,verbs WEFT_MPI_RUN_TIMEOUT=600 $top/test/mpi/run_mpi_tests.sh 2>&1
    st=\$?
    echo "guest: MPI over verbs (run_mpi_tests.sh, WEFT_TRANSPORTS=self,verbs) exit \$st in \$(( \$(date +%s) - start )) s"
    [ \$st -eq 0 ] || rc=1
else
    echo "guest: MPI over verbs not run: no MTL component, MPI test programs or mpirun in this build"
fi
# OpenSHMEM programs with verbs as the only transport between PEs: the heap and
# the data segment through RDMA and active messages, nothing mapped.
if [ -x ./shmem/build-oshrun ] && command -v mpirun >/dev/null; then
    start=\$(date +%s)
    WEFT_TRANSPORTS=self,verbs SHMEM_TEST_NP=2 SHMEM_TEST_TIMEOUT=600 SHMEM_SYMMETRIC_SIZE=128M \
        SHMEM_TEST_BUILD=/tmp/weft-shmem-tests $top/test/shmem/check_shmem.sh 2>&1
    st=\$?
    echo "guest: OpenSHMEM over verbs (check_shmem.sh, WEFT_TRANSPORTS=self,verbs) exit \$st in \$(( \$(date +%s) - start )) s"
    [ \$st -eq 0 ] || rc=1
else
    echo "guest: OpenSHMEM over verbs not run: no shmem wrappers or mpirun in this build"
fi
exit \$rc
GUEST
)
echo "run_verbs_vm: booting the Soft-RoCE VM ($vm), limit ${timeout}s"
"$vm" -q -n 2 -t "$timeout" -C "$build" -- bash -c "$guest"
st=$?
case $st in
    0) echo "run_verbs_vm: all verbs tests passed in the VM" ;;
    77) skip "the VM cannot run here (see the message above)" ;;
    124) echo "FAIL: the VM run hit its ${timeout}s limit" ;;
    125) echo "FAIL: the VM failed before the tests finished" ;;
    *) echo "FAIL: verbs tests failed in the VM (exit $st)" ;;
esac
exit "$st"
