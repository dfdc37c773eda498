#!/bin/sh
# The shm rendezvous claim has two paths: a pipelined copy through the queue
# (the default below WEFT_SHM_CMA_MIN) and a single cross-memory-attach read.
# The default runs of test_transport and test_variable cover the first; this
# runs the shm cases again with every rendezvous read by CMA.
set -e
export WEFT_SHM_CMA_MIN=0
./test_transport --gtest_filter='*/shm:*/auto'
./test_variable --gtest_filter='*/shm:*/auto'
