-- Argo CD health check for hpc.slurmoperator.dev/SlurmCronJob.
--
-- Install: argocd-cm key resource.customizations.health.hpc.slurmoperator.dev_SlurmCronJob
-- (see argocd-cm-patch.yaml). Test cases: health_test.yaml and testdata/ (run by
-- tests/gitops).
--
-- The operator (controller/cron/decide.cc) writes the condition Ready:
--   spec.suspend true                                             -> Suspended
--   Ready=True  (Scheduled, NoNextSchedule)                       -> Healthy
--   Ready=False (InvalidSchedule, InvalidTimeZone)                -> Degraded
--   no status or no Ready yet, Ready=Unknown, or a status for an older generation of the
--   spec (status.observedGeneration != metadata.generation)      -> Progressing
-- A SlurmCronJob is healthy when it schedules; the SlurmJobs it creates have their own health
-- (health.lua), and Argo CD shows them under it (they are owned by it).
--
-- Argo CD runs custom health scripts in gopher-lua (Lua 5.1) with only the base, table and a
-- safe os library loaded: no string or math library, no string methods. Keep it that way.

local hs = {}

local meta = obj.metadata or {}
local spec = obj.spec or {}
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
  hs.message = "Waiting for the operator to read the schedule."
  return hs
end

local generation = tonumber(meta.generation)
local observed = tonumber(status.observedGeneration)
if generation ~= nil and observed ~= nil and observed ~= generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to act on generation " .. tostring(generation) ..
      " of the spec (the status describes generation " .. tostring(observed) .. ")."
  return hs
end

if ready.status == "False" then
  hs.status = "Degraded"
  hs.message = ready.message
  if hs.message == nil or hs.message == "" then
    hs.message = "Ready=False (" .. tostring(ready.reason) .. ")"
  end
  return hs
end

if spec.suspend == true then
  hs.status = "Suspended"
  hs.message = "spec.suspend is true: no SlurmJob is created until it is cleared."
  return hs
end

local message = ready.message
if message == nil or message == "" then
  message = "Ready=" .. tostring(ready.status) .. " (" .. tostring(ready.reason) .. ")"
end
local active = tonumber(status.activeCount)
if active ~= nil and active > 0 then
  message = message .. " (" .. tostring(active) .. " active SlurmJob"
  if active > 1 then
    message = message .. "s"
  end
  message = message .. ")"
end
hs.message = message
if ready.status == "True" then
  hs.status = "Healthy"
else
  hs.status = "Progressing"
end
return hs
