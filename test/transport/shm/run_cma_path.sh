#!/bin/sh
# A shm rendezvous receiver either reads the data with one cross-memory-attach
# call or asks the sender to push it through the queue in pieces; by default
# (WEFT_RNDV_GET_MIN=auto) it chooses per message from the cost models and the
# sender's activity, so the default runs of test_transport and test_variable
# see a mix. This runs their shm cases once with every rendezvous read by CMA
# and once with every one pushed.
set -e
WEFT_RNDV_GET_MIN=0 ./test_transport --gtest_filter='*/shm:*/auto'
WEFT_RNDV_GET_MIN=0 ./test_variable --gtest_filter='*/shm:*/auto'
WEFT_RNDV_GET_MIN=inf ./test_transport --gtest_filter='*/shm:*/auto'
WEFT_RNDV_GET_MIN=inf ./test_variable --gtest_filter='*/shm:*/auto'
