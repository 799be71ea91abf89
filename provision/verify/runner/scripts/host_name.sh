# shellcheck shell=sh
# host_name.sh: prints the name the host calls itself, as the facts probe
# reads it (under the root): the name mpirun's ssh and srun -w know it by.
cat -- "$R/proc/sys/kernel/hostname"
