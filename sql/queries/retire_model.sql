-- Take a model out of the pool (its results stay; a later onboarding may bring it back).
update models set status = 'retired' where model = $model
