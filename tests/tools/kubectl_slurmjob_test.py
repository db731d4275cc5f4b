"""Unit tests of the kubectl slurmjob plugin's #SBATCH mapping (tools/kubectl-slurmjob), and of
its krew packaging. The end-to-end test (tests/e2e/e2e_test.cc, KubectlSlurmjobPlugin) runs it
through the real kubectl against the stand-ins."""
import hashlib
import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLUGIN = os.path.join(REPO, "tools", "kubectl-slurmjob", "kubectl-slurmjob")
loader = importlib.machinery.SourceFileLoader("kubectl_slurmjob", PLUGIN)
spec = importlib.util.spec_from_loader("kubectl_slurmjob", loader)
plugin = importlib.util.module_from_spec(spec)
loader.exec_module(plugin)


def mapped(lines):
    return plugin.spec_from_script("#!/bin/bash\n" + "\n".join(lines) + "\nsrun true\n")[0]


class Mapping(unittest.TestCase):
    def test_every_supported_option(self):
        s = mapped(["#SBATCH -J train -p gpu -N 2 -n 8 --ntasks-per-node=4 -c 8",
                    "#SBATCH --gpus-per-node=2 --mem=64G -t 1-02:30 -A proj -q high",
                    "#SBATCH -o out-%j.txt -e err-%j.txt --array=0-7%2",
                    "#SBATCH --dependency=afterok:prep:fetch,afterany:clean"])
        self.assertEqual(s["name"], "train")
        self.assertEqual(s["partition"], "gpu")
        self.assertEqual((s["nodes"], s["tasks"], s["tasksPerNode"], s["cpusPerTask"]),
                         (2, 8, 4, 8))
        self.assertEqual(s["gpusPerNode"], 2)
        self.assertEqual(s["memoryPerNodeMB"], 65536)
        self.assertEqual(s["timeLimitMinutes"], 1590)
        self.assertEqual((s["account"], s["qos"]), ("proj", "high"))
        self.assertEqual((s["standardOutput"], s["standardError"]), ("out-%j.txt", "err-%j.txt"))
        self.assertEqual(s["extra"], {"array": "0-7%2"})
        self.assertEqual(s["dependsOn"], [{"name": "prep", "condition": "afterok"},
                                          {"name": "fetch", "condition": "afterok"},
                                          {"name": "clean", "condition": "afterany"}])

    def test_gres_gpu_and_node_range(self):
        self.assertEqual(mapped(["#SBATCH --gres=gpu:a100:4"])["gpusPerNode"], 4)
        self.assertEqual(mapped(["#SBATCH --gres gpu:1"])["gpusPerNode"], 1)
        s = mapped(["#SBATCH --nodes=2-4"])
        self.assertEqual((s["minimumNodes"], s["maximumNodes"]), (2, 4))

    def test_slurm_time_formats(self):
        for text, want in (("30", 30), ("5:30", 6), ("2:00:00", 120), ("1-0", 1440),
                           ("1-2:3", 1563), ("0:0:1", 1)):
            self.assertEqual(plugin.minutes(text), want, text)

    def test_memory_units(self):
        for text, want in (("500", 500), ("500M", 500), ("2G", 2048), ("1T", 1048576),
                           ("2048K", 2)):
            self.assertEqual(plugin.memory_mb(text), want, text)

    def test_only_lines_before_the_first_command(self):
        s = plugin.spec_from_script("#!/bin/bash\n# a comment\n#SBATCH -p a\necho hi\n"
                                    "#SBATCH --exclusive\n")[0]
        self.assertEqual(s, {"partition": "a"})

    def test_refusals_name_the_option(self):
        for line, words in (("#SBATCH --exclusive", "--exclusive: no SlurmJob field"),
                            ("#SBATCH --gres=mps:10", "only gpu:N"),
                            ("#SBATCH --mem=lots", "--mem=lots"),
                            ("#SBATCH -t soon", "not a Slurm time"),
                            ("#SBATCH -N zero", "whole number"),
                            ("#SBATCH -d afterok:1234", "1234 is a Slurm job id"),
                            ("#SBATCH -d singleton", "only afterok:"),
                            ("#SBATCH -p", "needs a value")):
            with self.assertRaises(plugin.Refused, msg=line) as cm:
                mapped([line])
            self.assertIn(words, str(cm.exception), line)

    def test_dry_run_prints_the_manifest_and_refusal_exits_2(self):
        with tempfile.TemporaryDirectory() as d:
            script = os.path.join(d, "My Job.sh")
            with open(script, "w") as f:
                f.write("#!/bin/bash\n#SBATCH -p debug\necho hi\n")
            p = subprocess.run([sys.executable, PLUGIN, "submit", script, "--dry-run",
                                "--cluster", "local"], capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            m = yaml.safe_load(p.stdout)
            self.assertEqual(m["metadata"]["name"], "my-job")
            self.assertEqual(m["spec"]["clusterRef"], {"name": "local"})
            self.assertTrue(m["spec"]["script"].startswith("#!/bin/bash"))
            with open(script, "w") as f:
                f.write("#!/bin/bash\n#SBATCH --exclusive\n")
            p = subprocess.run([sys.executable, PLUGIN, "submit", script, "--dry-run"],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 2)
            self.assertIn("--exclusive", p.stderr)
            self.assertEqual(p.stdout, "")


class Krew(unittest.TestCase):
    def test_package_matches_its_manifest(self):
        with tempfile.TemporaryDirectory() as d:
            subprocess.run([os.path.join(REPO, "scripts", "package-kubectl-plugin.sh"), "v1.2.3",
                            d], check=True, capture_output=True)
            manifest = yaml.safe_load(open(os.path.join(d, "slurmjob.yaml")))
            self.assertEqual(manifest["kind"], "Plugin")
            self.assertEqual(manifest["spec"]["version"], "v1.2.3")
            platform = manifest["spec"]["platforms"][0]
            archive = os.path.join(d, "kubectl-slurmjob-v1.2.3.tar.gz")
            self.assertEqual(platform["sha256"], hashlib.sha256(open(archive, "rb").read())
                             .hexdigest())
            self.assertTrue(platform["uri"].endswith("/v1.2.3/kubectl-slurmjob-v1.2.3.tar.gz"))
            self.assertEqual(platform["bin"], "kubectl-slurmjob")


if __name__ == "__main__":
    unittest.main()
