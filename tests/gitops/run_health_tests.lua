-- File: tests/gitops/run_health_tests.lua
--
-- Runs Argo CD resource health scripts against test objects, the way Argo CD's controller runs
-- a health check from argocd-cm (argo-cd util/lua/lua.go):
--   * the object is the global `obj`, the script is run as a chunk and must return a table;
--   * only the base library, `table` and a safe `os` (clock, date, difftime, time) are loaded:
--     no `string`, `math`, `io` or `debug`, and strings have no methods (`s:find` fails);
--   * a status other than Healthy, Progressing, Degraded, Suspended, Missing or Unknown turns
--     into Unknown with the message "Lua returned an invalid health status";
--   * an absent message is "".
-- Argo CD uses gopher-lua (Lua 5.1); this runs Lua 5.4, so keep the scripts to the common
-- subset (no goto, no integer division, no bitwise operators).
--
-- Usage: lua5.4 run_health_tests.lua CASES.lua
-- CASES.lua returns a list of {name=, script=, obj=, expected={status=, message=}}; the driver
-- tests/gitops/run_gitops_tests.py writes it from deploy/gitops/argocd/health_test.yaml.
-- Prints one line per case and exits 1 if any case differs from its expectation.

local casesPath = arg[1]
if casesPath == nil then
  io.stderr:write("usage: lua5.4 run_health_tests.lua CASES.lua\n")
  os.exit(2)
end
local cases = dofile(casesPath)

local VALID_STATUS = {
  Healthy = true, Progressing = true, Degraded = true, Suspended = true, Missing = true,
  Unknown = true,
}

local BASE_FUNCTIONS = {
  "assert", "error", "getmetatable", "ipairs", "next", "pairs", "pcall", "print", "rawequal",
  "rawget", "rawset", "select", "setmetatable", "tonumber", "tostring", "type", "xpcall",
}

local function readFile(path)
  local f, err = io.open(path, "rb")
  if f == nil then
    error("cannot read " .. path .. ": " .. tostring(err))
  end
  local text = f:read("a")
  f:close()
  return text
end

local function newEnvironment(obj)
  local env = {}
  for _, name in ipairs(BASE_FUNCTIONS) do
    env[name] = _G[name]
  end
  env.unpack = table.unpack -- a global in Lua 5.1
  env.table = {
    concat = table.concat, insert = table.insert, remove = table.remove, sort = table.sort,
  }
  env.os = { clock = os.clock, date = os.date, difftime = os.difftime, time = os.time }
  env._G = env
  env.obj = obj
  return env
end

-- Returns {status=, message=} as Argo CD would record it, or nil and an error text.
local function runHealthScript(scriptPath, obj)
  local source = readFile(scriptPath)
  local env = newEnvironment(obj)
  local chunk, loadErr = load(source, "@" .. scriptPath, "t", env)
  if chunk == nil then
    return nil, "does not compile: " .. tostring(loadErr)
  end
  local stringMeta = getmetatable("")
  debug.setmetatable("", nil) -- no string methods, as without Argo CD's string library
  local ok, result = pcall(chunk)
  debug.setmetatable("", stringMeta)
  if not ok then
    return nil, "raised an error: " .. tostring(result)
  end
  if type(result) ~= "table" then
    return nil, "returned " .. type(result) .. ", not a table"
  end
  if result.message ~= nil and type(result.message) ~= "string" then
    return nil, "returned a " .. type(result.message) .. " message, not a string"
  end
  if not VALID_STATUS[result.status] then
    return { status = "Unknown", message = "Lua returned an invalid health status" }
  end
  return { status = result.status, message = result.message or "" }
end

local passed, failed = 0, 0
for _, case in ipairs(cases) do
  local got, err = runHealthScript(case.script, case.obj)
  local want = case.expected
  if got == nil then
    failed = failed + 1
    print(string.format("FAIL %s: %s %s", case.name, case.script, err))
  elseif got.status ~= want.status or got.message ~= want.message then
    failed = failed + 1
    print(string.format("FAIL %s:\n       got  %s %q\n       want %s %q", case.name, got.status,
        got.message, want.status, want.message))
  else
    passed = passed + 1
    print(string.format("ok   %s: %s", case.name, got.status))
  end
end
print(string.format("argocd health: %d passed, %d failed", passed, failed))
if failed > 0 or passed == 0 then
  os.exit(1)
end
