-- Argo CD health check for hpc.slurmoperator.dev/SlurmJob.
--
-- Install: argocd-cm key resource.customizations.health.hpc.slurmoperator.dev_SlurmJob
-- (see argocd-cm-patch.yaml). Test cases: health_test.yaml and testdata/ (run by
-- tests/gitops). Without a health check Argo CD shows every SlurmJob as Healthy.
--
-- Follows the operator's status (controller/reconcile/job_status.cc, decide.cc) in the order
-- kstatus uses, so Argo CD and Flux agree:
--   metadata.deletionTimestamp set           -> Progressing (the job is cancelled first)
--   no status yet                            -> Progressing
--   status.observedGeneration != generation  -> Progressing (the status is for an older spec)
--   spec.suspend and the job not submitted or held (status.reason Suspended, status.held)
--                                            -> Suspended
--   Reconciling=True (queued, running, submit retrying, retry run starting, job not found)
--                                            -> Progressing; Suspended while Slurm has the job
--                                               SUSPENDED
--   Stalled=True (failed, timed out, cancelled, cannot be submitted)
--                                            -> Degraded
--   Ready=True (the Slurm job completed)      -> Healthy
--   anything else                            -> Progressing
-- The message is the operator's status.message, which says what happened and what to do.
--
-- Argo CD runs custom health scripts in gopher-lua (Lua 5.1) with only the base, table and a
-- safe os library loaded: no string or math library, no string methods. Keep it that way.

local hs = {}

local function findCondition(conditions, conditionType)
  if conditions == nil then
    return nil
  end
  for _, c in ipairs(conditions) do
    if c.type == conditionType then
      return c
    end
  end
  return nil
end

local function isTrue(c)
  return c ~= nil and c.status == "True"
end

local function nonEmpty(s)
  return s ~= nil and s ~= ""
end

-- The first of a, b that is a non-empty string, else fallback.
local function pick(a, b, fallback)
  if nonEmpty(a) then
    return a
  end
  if nonEmpty(b) then
    return b
  end
  return fallback
end

local meta = obj.metadata or {}
local spec = obj.spec or {}
local status = obj.status

if meta.deletionTimestamp ~= nil then
  hs.status = "Progressing"
  local phase = status ~= nil and status.phase or nil
  local ended = phase == "Succeeded" or phase == "Failed" or phase == "Cancelled"
  local jobId = status ~= nil and status.jobId or nil
  if jobId ~= nil and jobId ~= 0 and not ended then
    if spec.deletionPolicy == "Orphan" then
      hs.message = "SlurmJob is being deleted; Slurm job " .. tostring(jobId) ..
          " is left running (spec.deletionPolicy is Orphan)."
    else
      hs.message = "SlurmJob is being deleted; the operator cancels Slurm job " ..
          tostring(jobId) .. " and removes the SlurmJob once Slurm reports it ended."
    end
  else
    hs.message = "SlurmJob is being deleted."
  end
  return hs
end

if status == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to report the SlurmJob's status."
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

local conditions = status.conditions
local reconciling = findCondition(conditions, "Reconciling")
local stalled = findCondition(conditions, "Stalled")
local failed = findCondition(conditions, "Failed")
local ready = findCondition(conditions, "Ready")

-- spec.suspend: not submitted, or held in Slurm while pending.
if spec.suspend == true and (status.held == true or status.reason == "Suspended") then
  hs.status = "Suspended"
  hs.message = pick(status.message, nil,
      "The SlurmJob is suspended (spec.suspend); clear it to submit or release the job.")
  return hs
end

if isTrue(reconciling) then
  if status.jobState == "SUSPENDED" then
    hs.status = "Suspended"
    hs.message = "Slurm job " .. tostring(status.jobId) ..
        " is suspended in Slurm (jobState SUSPENDED); it continues once Slurm resumes it."
    return hs
  end
  hs.status = "Progressing"
  hs.message = pick(status.message, reconciling.message,
      "The operator is working on the SlurmJob.")
  return hs
end

if isTrue(stalled) then
  hs.status = "Degraded"
  hs.message = pick(status.message, stalled.message, "The SlurmJob is stalled (" ..
      tostring(stalled.reason) .. ").")
  return hs
end

-- The operator always sets Stalled=True with these; kept for statuses written otherwise.
if isTrue(failed) or status.phase == "Failed" or status.phase == "Cancelled" then
  hs.status = "Degraded"
  hs.message = pick(status.message, failed ~= nil and failed.message or nil,
      "The Slurm job ended in phase " .. tostring(status.phase) .. ".")
  return hs
end

if isTrue(ready) then
  hs.status = "Healthy"
  hs.message = pick(status.message, ready.message, "The Slurm job completed.")
  return hs
end

hs.status = "Progressing"
hs.message = pick(status.message, ready ~= nil and ready.message or nil,
    "Waiting for the operator to report the SlurmJob's status.")
return hs
