#!/bin/sh
# /usr/local/sbin/gpuform-prolog: Slurm's Prolog= (slurm.conf). slurmd runs it as root
# with no PATH and gives it SLURMD_NODENAME and SLURM_JOB_ID.
exec /usr/local/bin/gpuform verify --local -slurm-prolog /etc/gpuform/spec
