"""Reads or edits Plan.sampler in a plan dumped to JSON by flatc.

  sampler.py show PLAN.json           prints the sampler and its kernel
  sampler.py set PLAN.json FIELD N    prints the plan with sampler.FIELD = N
"""
import json
import sys


def main():
    command, path = sys.argv[1], sys.argv[2]
    with open(path) as f:
        plan = json.load(f)
    sampler = plan.get("sampler")
    if command == "show":
        if sampler is None:
            print("sampler: none")
            return
        kernels = plan.get("kernels", [])
        index = sampler.get("kernel", 0)
        last = " (the last)" if index == len(kernels) - 1 else ""
        print("sampler: kernel %d of %d%s, k %d, threads %d"
              % (index, len(kernels), last, sampler.get("k", 0), sampler.get("threads", 0)))
        if index < len(kernels):
            print("kernel: " + kernels[index].get("source", ""))
        return
    if command == "set":
        sampler[sys.argv[3]] = int(sys.argv[4])
        json.dump(plan, sys.stdout)
        return
    sys.exit("unknown command " + command)


if __name__ == "__main__":
    main()
