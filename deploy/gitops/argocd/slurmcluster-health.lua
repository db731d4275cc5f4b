-- Argo CD health check for hpc.slurmoperator.dev/SlurmCluster.
--
-- Install: argocd-cm key resource.customizations.health.hpc.slurmoperator.dev_SlurmCluster
-- (see argocd-cm-patch.yaml). Test cases: health_test.yaml and testdata/ (run by
-- tests/gitops).
--
-- The operator probes the cluster (controller/reconcile/cluster_status.cc) and writes one
-- condition, Ready:
--   Ready=True  (Reachable)                                      -> Healthy
--   Ready=False (InvalidSpec, CredentialsInvalid, PermissionDenied, ClusterNotFound,
--                VersionNotServed, SlurmUnhealthy, Unreachable)  -> Degraded
--   no status or no Ready yet, Ready=Unknown, or a status for an older generation of the
--   spec (status.observedGeneration != metadata.generation)      -> Progressing
-- The message is the Ready condition's message, which names the cause and what to check.
--
-- Argo CD runs custom health scripts in gopher-lua (Lua 5.1) with only the base, table and a
-- safe os library loaded: no string or math library, no string methods. Keep it that way.

local hs = {}

local meta = obj.metadata or {}
local status = obj.status

local ready = nil
if status ~= nil and status.conditions ~= nil then
  for _, c in ipairs(status.conditions) do
    if c.type == "Ready" then
      ready = c
    end
  end
end

if ready == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to probe the Slurm cluster."
  return hs
end

local generation = tonumber(meta.generation)
local observed = tonumber(status.observedGeneration)
if generation ~= nil and observed ~= nil and observed ~= generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to probe generation " .. tostring(generation) ..
      " of the spec (the status describes generation " .. tostring(observed) .. ")."
  return hs
end

local message = ready.message
if message == nil or message == "" then
  message = "Ready=" .. tostring(ready.status) .. " (" .. tostring(ready.reason) .. ")"
end
hs.message = message
if ready.status == "True" then
  hs.status = "Healthy"
elseif ready.status == "False" then
  hs.status = "Degraded"
else
  hs.status = "Progressing"
end
return hs
