#!/bin/sh
# /usr/local/sbin/gpuform-health: Slurm's HealthCheckProgram= (slurm.conf).
# slurmd runs it as root with no arguments and ignores its exit status:
# gpuform drains the node itself.
exec /usr/local/bin/gpuform verify --local -slurm-drain /etc/gpuform/spec
